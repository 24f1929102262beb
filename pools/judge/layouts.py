"""The judge's pools whose slot is not a plain buffer row: HND page-major, aiter's 5-D, NPU.

Buffer shapes and attribute names are SGLang 0.5.23's (the harness reads them by name):
- HND (`SGLANG_USE_HND_KVCACHE`): per layer (pages, heads, page_size, dim).
- aiter `vectorized_5d`: K (blocks, heads, dim // X, page_size, X), V (blocks, heads,
  page_size // X, dim, X), X = 16 bytes / element size.
- NPU MHA: one (layers, pages, page_size, heads, dim) tensor per K and V.
- NPU MLA: the latent (k_buffer) and the rope part (v_buffer) in two all-layer tensors; its
  set_kv_buffer(layer, loc, cache_k, cache_v) means (nope, rope), a None rope splits the row.
Scales and casts are the token-major pools' (pools/judge/token_major.py); only placement differs.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from pools.judge.casts import bits_view
from pools.judge.eras import judge_over_era_doors
from pools.judge.token_major import MHAJudgePool, MLAJudgePool, layer_index
from pools.judge.token_writes import (
    aiter_key_row,
    aiter_key_slots,
    aiter_value_row,
    aiter_value_slots,
    hnd_row,
    hnd_slots,
    write_paged,
    write_rows,
)
from pools.kinds.layout import MHA_AITER5D, MHA_HND, NPU_MHA, NPU_MLA


def _pages(pool: Any, what: str) -> int:
    total = pool.size + pool.page_size
    if total % pool.page_size:
        raise ValueError(
            f"{what} needs size + page_size divisible by page_size, got "
            f"size={pool.size}, page_size={pool.page_size}"
        )
    return total // pool.page_size


class HNDJudgePool(MHAJudgePool):
    kv_cache_layout = "hnd"

    def _create_buffers(self) -> None:
        pages = _pages(self, "a paged layout")
        self.k_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size, self.head_dim), dtype=self.store_dtype
            )
            for _ in range(self.layer_num)
        ]
        self.v_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size, self.v_head_dim), dtype=self.store_dtype
            )
            for _ in range(self.layer_num)
        ]

    def _write(self, buffer: torch.Tensor, loc: torch.Tensor, rows: np.ndarray, part: str) -> None:
        write_paged(bits_view(buffer), loc, rows, hnd_row, hnd_slots)


class Aiter5DJudgePool(MHAJudgePool):
    kv_cache_layout = "vectorized_5d"

    def _create_buffers(self) -> None:
        pages = _pages(self, "a paged layout")
        x = 16 // torch.empty((), dtype=self.store_dtype).element_size()
        for name, width in (
            ("head_dim", self.head_dim),
            ("v_head_dim", self.v_head_dim),
            ("page_size", self.page_size),
        ):
            if width % x:
                raise ValueError(
                    f"vectorized_5d needs {name} ({width}) divisible by X = 16 bytes / "
                    f"element size = {x}"
                )
        self.k_buffer = [
            torch.zeros(
                (pages, self.head_num, self.head_dim // x, self.page_size, x),
                dtype=self.store_dtype,
            )
            for _ in range(self.layer_num)
        ]
        self.v_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size // x, self.v_head_dim, x),
                dtype=self.store_dtype,
            )
            for _ in range(self.layer_num)
        ]

    def _write(self, buffer: torch.Tensor, loc: torch.Tensor, rows: np.ndarray, part: str) -> None:
        bits = bits_view(buffer)
        if part == "k":  # a K row is stored as (heads, dim // X, X)
            x = bits.shape[4]
            write_paged(
                bits,
                loc,
                rows.reshape(rows.shape[0], rows.shape[1], -1, x),
                aiter_key_row,
                aiter_key_slots,
            )
        else:
            write_paged(bits, loc, rows, aiter_value_row, aiter_value_slots)


def _all_layers(pool: Any, *row: int) -> torch.Tensor:
    pages = _pages(pool, "NPU pools")
    return torch.zeros((pool.layer_num, pages, pool.page_size, *row), dtype=pool.store_dtype)


def _token_rows(layer_buffer: torch.Tensor) -> np.ndarray:
    """A layer's (pages, page_size, ...) buffer as (slots, ...) rows of bits, the same memory."""
    bits = bits_view(layer_buffer)
    if 0 in bits.shape[2:]:  # torch cannot infer the -1 of a zero-wide row either
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape [-1, {bits.shape[2]}, "
            f"{bits.shape[3]}] because the unspecified dimension size -1 can be any value"
        )
    return bits.reshape(-1, *bits.shape[2:])


class NPUMHAJudgePool(MHAJudgePool):
    def _create_buffers(self) -> None:
        self.k_buffer = _all_layers(self, self.head_num, self.head_dim)
        self.v_buffer = _all_layers(self, self.head_num, self.v_head_dim)

    def _write(self, buffer: torch.Tensor, loc: torch.Tensor, rows: np.ndarray, part: str) -> None:
        write_rows(_token_rows(buffer), loc, rows)


class NPUMLAJudgePool(MLAJudgePool):
    npu_nope_rope_set_kv_buffer = True

    def _create_buffers(self) -> None:
        self.k_buffer = _all_layers(self, 1, self.kv_lora_rank)
        self.v_buffer = _all_layers(self, 1, self.qk_rope_head_dim)

    # As SGLang's NPU MLA pool: the raw buffers, not viewed as the pool dtype.
    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.k_buffer[layer_id - self.start_layer]

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.v_buffer[layer_id - self.start_layer]

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        self.set_mla_kv_buffer(layer, loc_info, cache_k, cache_v, layer_id_override)

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        self._store_nope_rope(layer, loc, cache_k, None, layer_id_override)

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        if k_rope is None:
            width = k_nope.shape[-1]
            if width != self.kv_lora_rank + self.qk_rope_head_dim:
                raise RuntimeError(
                    f"split_with_sizes expects split_sizes to sum exactly to {width}, "
                    f"but got [{self.kv_lora_rank}, {self.qk_rope_head_dim}]"
                )
            k_nope, k_rope = k_nope[..., : self.kv_lora_rank], k_nope[..., self.kv_lora_rank :]
        index = layer_index(layer, layer_id_override) - self.start_layer
        write_rows(_token_rows(self.k_buffer[index]), loc, self._stored(k_nope))
        write_rows(_token_rows(self.v_buffer[index]), loc, self._stored(k_rope))


for _kind, _storage in (
    (MHA_HND, HNDJudgePool),
    (NPU_MHA, NPUMHAJudgePool),
    (NPU_MLA, NPUMLAJudgePool),
    (MHA_AITER5D, Aiter5DJudgePool),
):
    judge_over_era_doors(_kind, _storage)
