"""The judge's page-interleave pools, as SGLang 0.5.23's (mem_cache/page_interleave_pool.py,
mem_cache/page_interleave.py): an MHA or MLA pool whose logical pages are striped across a
shard group of `shard_size` ranks; each rank keeps only the tokens of the pages it owns.

- A logical token id `loc = Q*(N*ps) + r*ps + o` belongs to rank r and lands on that rank's local
  row `Q*ps + o` (PageInterleavePlacement). A rank drops the tokens of the other ranks' pages.
- The doors unwrap (loc, _, _), pick the owned tokens in order (index_select), and write them at
  their local rows as a bare loc through the era's door. They skip the call when nothing is
  owned.
- The MHA door divides by the scales out of place (`cache_k / k_scale`, not div_) and casts
  before it selects: the caller's k and v are never divided.
- The MLA doors hand the selected rows on unchanged: set_kv_buffer the combined row (its v
  unselected, as SGLang passes it), set_mla_kv_buffer nope and rope.
- With no sharded extend in flight (the decode and plain prefill path modelled here) the
  per-batch scratch slots are not written; they are a read path.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.dsa_index import JudgeDSAPool
from pools.kinds.hybrid import PAGE_INTERLEAVE_DSA, PAGE_INTERLEAVE_MHA, PAGE_INTERLEAVE_MLA
from pools.kinds.pool_classes import judge_pool
from pools.write_loc import unwrap_current


class PageOwnership:
    def __init__(self, *args: Any, shard_rank: int, shard_size: int, **kwargs: Any) -> None:
        if shard_size <= 1 or not 0 <= shard_rank < shard_size:
            raise AssertionError("page-interleave sharding needs shard_size > 1 and a rank in it")
        self.shard_rank, self.shard_size = shard_rank, shard_size
        super().__init__(*args, **kwargs)

    def _owned(self, loc_info: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(positions into loc of the tokens this rank owns, their local rows)."""
        loc, _, _ = unwrap_current(loc_info)
        page = self.page_size
        logical_page = torch.div(loc, page, rounding_mode="floor")
        positions = torch.nonzero(logical_page % self.shard_size == self.shard_rank).squeeze(1)
        owned = loc[positions]
        rows = torch.div(owned, page * self.shard_size, rounding_mode="floor") * page + owned % page
        return positions, rows


class PageInterleaveMHAJudgePool(PageOwnership):
    """Before the era's MHATokenToKVPool in the MRO (pools/judge/__init__.py)."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Optional[float] = None,
        v_scale: Optional[float] = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        # Copies of the owned rows (advanced indexing copies): the era's door divides and casts
        # them, so the caller's k and v stay undivided, as SGLang's out-of-place division leaves
        # them, with the same rounding (division in the caller's dtype, then the cast).
        positions, rows = self._owned(loc_info)
        if positions.numel():
            super().set_kv_buffer(
                layer, rows, cache_k[positions], cache_v[positions], k_scale, v_scale,
                layer_id_override=layer_id_override,
            )  # fmt: skip


class PageInterleaveMLAJudgePool(PageOwnership):
    """Before the era's MLATokenToKVPool in the MRO."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: Any,
        layer_id_override: Optional[int] = None,
    ) -> None:
        positions, rows = self._owned(loc_info)
        if positions.numel():
            super().set_kv_buffer(
                layer, rows, cache_k[positions], cache_v, layer_id_override=layer_id_override
            )

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        positions, rows = self._owned(loc_info)
        if positions.numel():
            super().set_mla_kv_buffer(
                layer, rows, cache_k_nope[positions], cache_k_rope[positions],
                layer_id_override=layer_id_override,
            )  # fmt: skip


class PageInterleaveDSAJudgePool(PageInterleaveMLAJudgePool, JudgeDSAPool):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor plus the
    shard: its indexer keys are page-interleaved as its rows are, the owned tokens' keys at
    their local slots (_PageInterleaveIndexKeyCache), the others dropped."""

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        positions, rows = self._owned(loc)
        if positions.numel():
            super().set_index_k_scale_buffer(
                layer_id, rows, index_k[positions], index_k_scale[positions]
            )


@judge_pool(PAGE_INTERLEAVE_MHA)
def page_interleave_mha_judge(module) -> type:
    name = PAGE_INTERLEAVE_MHA.sglang_class
    return type(name, (PageInterleaveMHAJudgePool, module.MHATokenToKVPool), {})


@judge_pool(PAGE_INTERLEAVE_MLA)
def page_interleave_mla_judge(module) -> type:
    name = PAGE_INTERLEAVE_MLA.sglang_class
    return type(name, (PageInterleaveMLAJudgePool, module.MLATokenToKVPool), {})


@judge_pool(PAGE_INTERLEAVE_DSA)
def page_interleave_dsa_judge(module) -> type:
    name = PAGE_INTERLEAVE_DSA.sglang_class
    return type(name, (PageInterleaveDSAJudgePool, module.MLATokenToKVPool), {})
