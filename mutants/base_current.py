"""A correct SGLang 0.5.23 (`current`) module: KVWriteLoc(loc, swa_loc, full_loc, physical), cut
to len(loc) in __post_init__ (PR #29460), with the for_batch / for_layer constructors, all shared
from pools.write_loc (SGLang's API surface, pinned to the installed SGLang by
tests/test_write_loc_sglang.py). The doors are 0.5.14's with the 3-value unwrap; SWAKVPool reads
loc and swa_loc and, as 0.5.23's does, never full_loc. The MHA door takes a DCP rank's mask of
the tokens it stores (dcp_kv_mask)."""

from __future__ import annotations

from typing import Any, Optional

import torch

from mutants import base_bundled
from pools.write_loc import CurrentWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_current as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


class MHATokenToKVPool(base_bundled.MHATokenToKVPool):
    unwrap = staticmethod(unwrap_write_loc)

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
        dcp_kv_mask: Optional[torch.Tensor] = None,
    ) -> None:
        """0.5.14's door, and a DCP rank's mask: every token divided and cast, the kept ones
        stored."""
        if dcp_kv_mask is None:
            super().set_kv_buffer(
                layer, loc_info, cache_k, cache_v, k_scale, v_scale, layer_id_override
            )
            return
        tokens = cache_k.shape[0]
        kept = dcp_kv_mask[:tokens] != 0
        loc = self._loc(loc_info)[:tokens][kept]
        index = self._index(layer, layer_id_override)
        self._divide(cache_k, cache_v, k_scale, v_scale)
        self._put(self.k_buffer[index], loc, self._cast(cache_k)[kept])
        self._put(self.v_buffer[index], loc, self._cast(cache_v)[kept])

    def set_kv_buffer_prefix_valid(
        self,
        layer: Any,
        loc_2d: torch.Tensor,
        commit_lens: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        """A draft's commit, 0.5.23's CPU path: each row's first commit_lens[r] tokens through
        set_kv_buffer, with copies of their rows."""
        if loc_2d.ndim != 2 or tuple(commit_lens.shape) != (loc_2d.shape[0],):
            raise ValueError("loc_2d must be rank-2 with one commit length per row")
        if cache_k.shape[0] != loc_2d.numel() or cache_v.shape[0] != loc_2d.numel():
            raise ValueError("KV rows must match loc_2d size")
        width = loc_2d.shape[1]
        kept = [
            row * width + column
            for row, length in enumerate(commit_lens.tolist())
            for column in range(min(max(length, 0), width))
        ]
        if kept:
            rows = torch.tensor(kept, dtype=torch.long)
            layer_id = layer.layer_id if layer_id_override is None else layer_id_override
            self.set_kv_buffer(
                layer, loc_2d.reshape(-1)[rows], cache_k[rows], cache_v[rows], k_scale, v_scale,
                layer_id_override=layer_id,
            )  # fmt: skip


class MLATokenToKVPool(base_bundled.MLATokenToKVPool):
    """0.5.14's doors, on a DCP rank too (dcp_size, dcp_rank): set_mla_kv_buffer takes every
    rank's ids and stores its own (id % dcp_size == dcp_rank, id 0 dropped where a rope part is
    written) at id // dcp_size; set_kv_buffer has no rank's rule and asserts."""

    unwrap = staticmethod(unwrap_write_loc)

    def __init__(self, *args: Any, dcp_size: int = 1, dcp_rank: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dcp_size, self.dcp_rank = dcp_size, dcp_rank

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        if self.dcp_size > 1:
            raise AssertionError("an MLA DCP rank's set_kv_buffer has no rank's rule")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc = self._loc(loc_info)
        rope = cache_k_rope is not None and cache_k_rope.numel() > 0
        if self.dcp_size > 1 and cache_k_nope.shape[0] == loc.shape[0]:
            owned = (loc % self.dcp_size == self.dcp_rank) & ~(rope & (loc == 0))
            loc = loc[owned] // self.dcp_size
            cache_k_nope = cache_k_nope[owned]
            if rope:
                cache_k_rope = cache_k_rope[owned]
        super().set_mla_kv_buffer(layer, loc, cache_k_nope, cache_k_rope, layer_id_override)


class SWAKVPool(base_bundled.SWAKVPool):
    unwrap = staticmethod(unwrap_write_loc)
    sub_pool_class = MHATokenToKVPool
