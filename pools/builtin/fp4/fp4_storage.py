"""FP4 pools: SGLang 0.5.23 MHATokenToKVPoolFP4 and MLATokenToKVPoolFP4 (mem_cache/memory_pool.py).

Packed e2m1 data (two values a byte) and one scale byte per 16 values are written at the same
slots. The pool dtype is torch.float4_e2m1fn_x2, stored as uint8; any other input dtype is
divided by the scales in place (MHA) and quantised (pools/builtin/fp4/quantiser.py says how).
MLA: set_kv_buffer quantises the latent row whole; set_mla_kv_buffer quantises nope and rope
apart and writes each at its columns of the data and scale rows.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, MLAStorage, _layer_index
from pools.builtin.engines.base import Scale
from pools.builtin.fp4.quantiser import BLOCK

FP4_DTYPE = torch.float4_e2m1fn_x2


def _zeros(storage: Any, *row: int) -> list[torch.Tensor]:
    return [
        torch.zeros(
            (storage.size + storage.page_size, *row), dtype=torch.uint8, device=storage.device
        )
        for _ in range(storage.layer_num)
    ]


class MHAFP4Storage(MHAStorage):
    def _create_buffers(self) -> None:
        if (
            self.v_head_dim != self.head_dim
            or (self.head_num * self.head_dim) % BLOCK
            or self.head_dim % 2
        ):
            raise ValueError(
                f"FP4 MHA pools need v_head_dim == head_dim, an even head_dim and "
                f"head_num * head_dim a multiple of {BLOCK}"
            )
        self.store_dtype = torch.uint8
        self.k_buffer = _zeros(self, self.head_num, self.head_dim // 2)
        self.v_buffer = _zeros(self, self.head_num, self.head_dim // 2)
        self.k_scale_buffer = _zeros(self, self.head_num * self.head_dim // BLOCK)
        self.v_scale_buffer = _zeros(self, self.head_num * self.head_dim // BLOCK)

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        layer_id_override: Optional[int],
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        if cache_k.dtype == self.dtype:
            raise NotImplementedError("pre-quantised FP4 input carries no block scales")
        if k_scale is not None:
            cache_k.div_(k_scale)
        if v_scale is not None:
            cache_v.div_(v_scale)
        engine = self.engine
        for values, data, scales in (
            (cache_k, self.k_buffer, self.k_scale_buffer),
            (cache_v, self.v_buffer, self.v_scale_buffer),
        ):
            packed, block_scales = engine.quantize_fp4(values)
            engine.scatter(data[index], loc, packed)
            engine.scatter(scales[index], loc, block_scales)


class MLAFP4Storage(MLAStorage):
    def _create_buffers(self) -> None:
        if self.kv_lora_rank % BLOCK or self.qk_rope_head_dim % BLOCK:
            raise ValueError(
                f"FP4 MLA pools need kv_lora_rank and qk_rope_head_dim multiples of {BLOCK}"
            )
        self.store_dtype = torch.uint8
        self.kv_buffer = _zeros(self, 1, self.kv_cache_dim // 2)
        self.kv_scale_buffer = _zeros(self, self.kv_cache_dim // BLOCK)

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        packed, scales = self.engine.quantize_fp4(cache_k)
        self.engine.scatter(self.kv_buffer[index], loc, packed)
        self.engine.scatter(self.kv_scale_buffer[index], loc, scales)

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        parts = [self.engine.quantize_fp4(k_nope)]
        if k_rope is not None and k_rope.numel() > 0:
            parts.append(self.engine.quantize_fp4(k_rope))
        self.engine.scatter_columns(self.kv_buffer[index], loc, [data for data, _ in parts])
        self.engine.scatter_columns(
            self.kv_scale_buffer[index], loc, [scales for _, scales in parts]
        )
