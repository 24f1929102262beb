"""The judge's FP4 pools (SGLang 0.5.23 MHATokenToKVPoolFP4, MLATokenToKVPoolFP4).

Packed e2m1 data (two values a byte) and one uint8 scale per 16 values, both written at the same
slots. MHA: pre-quantised input is refused; otherwise k and v are divided in place by their
scales whatever the input dtype (there is always a cast to FP4), then quantised. MLA:
set_kv_buffer quantises the latent row whole; set_mla_kv_buffer quantises nope and rope apart
and writes each at its own columns of the data and scale rows.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge import fp4
from pools.judge.casts import bits_view
from pools.judge.divide import divide_in_place
from pools.judge.eras import judge_over_era_doors
from pools.judge.token_major import MHAJudgePool, MLAJudgePool, layer_index
from pools.judge.token_writes import write_columns, write_rows
from pools.kinds.layout import MHA_FP4, MLA_FP4


class MHAFP4JudgePool(MHAJudgePool):
    def _create_buffers(self) -> None:
        flat = self.head_num * self.head_dim
        if self.v_head_dim != self.head_dim or flat % fp4.BLOCK or self.head_dim % 2:
            raise ValueError(
                f"FP4 MHA pools need v_head_dim == head_dim, an even head_dim and "
                f"head_num * head_dim a multiple of {fp4.BLOCK}"
            )
        self.store_dtype = torch.uint8
        self.k_buffer = self._zeros(self.head_num, self.head_dim // 2)
        self.v_buffer = self._zeros(self.head_num, self.head_dim // 2)
        self.k_scale_buffer = self._zeros(self.head_num * self.head_dim // fp4.BLOCK)
        self.v_scale_buffer = self._zeros(self.head_num * self.head_dim // fp4.BLOCK)

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
        layer_id_override: Optional[int],
    ) -> None:
        index = layer_index(layer, layer_id_override) - self.start_layer
        if cache_k.dtype == self.dtype:
            raise NotImplementedError("pre-quantised FP4 input carries no block scales")
        if k_scale is not None:
            divide_in_place(cache_k, k_scale)
        if v_scale is not None:
            divide_in_place(cache_v, v_scale)
        for values, data, scales in (
            (cache_k, self.k_buffer, self.k_scale_buffer),
            (cache_v, self.v_buffer, self.v_scale_buffer),
        ):
            packed, block_scales = fp4.quantize(values)
            write_rows(bits_view(data[index]), loc, packed)
            write_rows(bits_view(scales[index]), loc, block_scales)


class MLAFP4JudgePool(MLAJudgePool):
    def _create_buffers(self) -> None:
        if self.kv_lora_rank % fp4.BLOCK or self.qk_rope_head_dim % fp4.BLOCK:
            raise ValueError(
                f"FP4 MLA pools need kv_lora_rank and qk_rope_head_dim multiples of {fp4.BLOCK}"
            )
        self.store_dtype = torch.uint8
        self.kv_buffer = self._zeros(1, self.kv_cache_dim // 2)
        self.kv_scale_buffer = self._zeros(self.kv_cache_dim // fp4.BLOCK)

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        index = layer_index(layer, layer_id_override) - self.start_layer
        packed, scales = fp4.quantize(cache_k)
        write_rows(bits_view(self.kv_buffer[index]), loc, packed)
        write_rows(bits_view(self.kv_scale_buffer[index]), loc, scales)

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        index = layer_index(layer, layer_id_override) - self.start_layer
        parts = [fp4.quantize(k_nope)]
        if k_rope is not None and k_rope.numel() > 0:
            parts.append(fp4.quantize(k_rope))
        write_columns(bits_view(self.kv_buffer[index]), loc, [data for data, _ in parts])
        write_columns(bits_view(self.kv_scale_buffer[index]), loc, [scales for _, scales in parts])


judge_over_era_doors(MHA_FP4, MHAFP4JudgePool)
judge_over_era_doors(MLA_FP4, MLAFP4JudgePool)
