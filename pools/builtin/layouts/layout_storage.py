"""Storage for the MHA pools whose slot is not a buffer row: HND page-major and aiter's 5-D.

Era front-ends come from pools.builtin.sut (the era's MHATokenToKVPool first in the MRO, so its
set_kv_buffer parses the loc, then this storage's buffers and `_store`).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, _layer_index
from pools.builtin.engines.base import Scale
from pools.builtin.layouts.paged import AITER_K, AITER_V, HND_LAYOUT, vector_width


class _PagedMHAStorage(MHAStorage):
    k_layout: Any
    v_layout: Any

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
        engine = self.engine
        if cache_k.dtype != self.dtype:  # both divisions before either cast, as SGLang
            if k_scale is not None:
                cache_k.div_(k_scale)
            if v_scale is not None:
                cache_v.div_(v_scale)
        engine.scatter_layout(
            self.k_buffer[index],
            loc,
            engine.prepare(cache_k, None, self.dtype, self.store_dtype),
            self.k_layout,
        )
        engine.scatter_layout(
            self.v_buffer[index],
            loc,
            engine.prepare(cache_v, None, self.dtype, self.store_dtype),
            self.v_layout,
        )

    def _pages(self) -> int:
        total = self.size + self.page_size
        if total % self.page_size:
            raise ValueError(
                f"a paged layout needs size + page_size divisible by page_size, got "
                f"size={self.size}, page_size={self.page_size}"
            )
        return total // self.page_size


class HNDStorage(_PagedMHAStorage):
    """SGLang 0.5.23 MHATokenToKVPool with SGLANG_USE_HND_KVCACHE: (pages, heads, page, dim)."""

    k_layout = v_layout = HND_LAYOUT
    kv_cache_layout = "hnd"

    def _create_buffers(self) -> None:
        pages = self._pages()
        self.k_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size, self.head_dim),
                dtype=self.store_dtype,
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]
        self.v_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size, self.v_head_dim),
                dtype=self.store_dtype,
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]


class Aiter5DStorage(_PagedMHAStorage):
    """SGLang 0.5.23 MHATokenToKVPool with SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d."""

    k_layout, v_layout = AITER_K, AITER_V
    kv_cache_layout = "vectorized_5d"

    def _create_buffers(self) -> None:
        pages, x = self._pages(), vector_width(self.store_dtype)
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
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]
        self.v_buffer = [
            torch.zeros(
                (pages, self.head_num, self.page_size // x, self.v_head_dim, x),
                dtype=self.store_dtype,
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]
