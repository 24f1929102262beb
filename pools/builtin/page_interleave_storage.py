"""The builtin page-interleave pools (SGLang 0.5.23 mem_cache/page_interleave_pool.py): an MHA or
MLA pool whose logical pages are striped over `shard_size` ranks. This rank keeps the tokens of
the pages it owns, `(loc % (N*ps)) // ps == shard_rank`, at local row `(loc // (N*ps))*ps +
loc % ps` (PageInterleavePlacement), through the era's door with a bare loc. The MHA door divides
out of place, so the caller's k and v are left as they came.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dsa_storage import DSAStorage
from pools.kinds.hybrid import PAGE_INTERLEAVE_DSA, PAGE_INTERLEAVE_MHA, PAGE_INTERLEAVE_MLA
from pools.kinds.pool_classes import builtin_pool
from pools.write_loc import unwrap_current


class PagePlacement:
    def __init__(self, *args: Any, shard_rank: int, shard_size: int, **kwargs: Any) -> None:
        assert shard_size > 1, "page-interleave sharding needs shard_size > 1"
        self.shard_rank, self.shard_size = shard_rank, shard_size
        super().__init__(*args, **kwargs)

    def write_plan(self, loc_info: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(owned positions into loc, their local physical rows)."""
        loc, _, _ = unwrap_current(loc_info)
        span = self.shard_size * self.page_size
        owned_idx = torch.nonzero((loc % span) // self.page_size == self.shard_rank).squeeze(1)
        owned = loc.index_select(0, owned_idx)
        return owned_idx, (owned // span) * self.page_size + owned % self.page_size


class PageInterleaveMHAStorage(PagePlacement):
    """Before the era's MHATokenToKVPool in the MRO (pools/builtin/sut.py)."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        if cache_k.dtype != self.dtype:
            cache_k = cache_k if k_scale is None else cache_k / k_scale
            cache_v = cache_v if v_scale is None else cache_v / v_scale
        owned_idx, local_rows = self.write_plan(loc_info)
        if owned_idx.numel() > 0:
            super().set_kv_buffer(
                layer, local_rows, cache_k.index_select(0, owned_idx),
                cache_v.index_select(0, owned_idx), layer_id_override=layer_id_override,
            )  # fmt: skip


class PageInterleaveMLAStorage(PagePlacement):
    """Before the era's MLATokenToKVPool in the MRO."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: Any,
        layer_id_override: Optional[int] = None,
    ) -> None:
        owned_idx, local_rows = self.write_plan(loc_info)
        if owned_idx.numel() > 0:
            super().set_kv_buffer(
                layer, local_rows, cache_k.index_select(0, owned_idx), cache_v,
                layer_id_override=layer_id_override,
            )  # fmt: skip

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        owned_idx, local_rows = self.write_plan(loc_info)
        if owned_idx.numel() > 0:
            super().set_mla_kv_buffer(
                layer, local_rows, cache_k_nope.index_select(0, owned_idx),
                cache_k_rope.index_select(0, owned_idx), layer_id_override=layer_id_override,
            )  # fmt: skip


class PageInterleaveDSAStorage(PageInterleaveMLAStorage, DSAStorage):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor plus the
    shard: the indexer keys of owned tokens at their local slots, as the rows."""

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        owned_idx, local_rows = self.write_plan(loc)
        if owned_idx.numel() > 0:
            super().set_index_k_scale_buffer(
                layer_id, local_rows, index_k.index_select(0, owned_idx),
                index_k_scale.index_select(0, owned_idx),
            )  # fmt: skip


@builtin_pool(PAGE_INTERLEAVE_MHA)
def page_interleave_mha_pool(module: Any) -> type:
    name = PAGE_INTERLEAVE_MHA.sglang_class
    return type(name, (PageInterleaveMHAStorage, module.MHATokenToKVPool), {})


@builtin_pool(PAGE_INTERLEAVE_MLA)
def page_interleave_mla_pool(module: Any) -> type:
    name = PAGE_INTERLEAVE_MLA.sglang_class
    return type(name, (PageInterleaveMLAStorage, module.MLATokenToKVPool), {})


@builtin_pool(PAGE_INTERLEAVE_DSA)
def page_interleave_dsa_pool(module: Any) -> type:
    name = PAGE_INTERLEAVE_DSA.sglang_class
    return type(name, (PageInterleaveDSAStorage, module.MLATokenToKVPool), {})
