"""The judge's unified MHA and MLA pools, as SGLang 0.5.23's UnifiedMHATokenToKVPool and
UnifiedMLATokenToKVPool over a UnifiedKVPool (mem_cache/unified_memory_pool.py,
layout/token_major.py):

- one uint8 buffer of (size + page_size) entries. MHA: a slot's entry is
  [K_0 | V_0 | K_1 | V_1 | ...]; MLA: [latent_0 | latent_1 | ...] with rope > 0. Every row is a
  multiple of 16 bytes, the entry padded to a multiple of 32;
- a layer's buffer is a (slots, *row) view with the entry as slot stride, starting at its rows'
  byte offset within the entry;
- `requires_physical_write_loc`: every door refuses a loc that is not a KVWriteLoc marked
  physical with ValueError (memory_pool.py `_check_physical_write_loc`), before any byte moves.

Stores go row by row through the views (pools/judge/token_writes.py), so a slot's bytes land at
entry * slot + offset, and nothing writes the bytes of another slot or layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pools.judge.eras import judge_over_era_doors
from pools.judge.token_major import MHAJudgePool, MLAJudgePool
from pools.kinds.layout import UNIFIED_MHA, UNIFIED_MLA


def _refuse_unmarked(loc_info: Any, door: str) -> None:
    if not getattr(loc_info, "physical", False):  # a bare loc has no mark
        raise ValueError(f"{door}: write loc is not marked physical")


def entry_bytes(layers: int, layer_bytes: int) -> int:
    """One slot's entry: every layer's rows, padded to a multiple of 32 bytes."""
    return (layers * layer_bytes + 31) // 32 * 32


def _entry(pool: Any, parts: list[tuple[int, ...]]) -> list[list[torch.Tensor]]:
    """Allocate `pool.raw` (or take the class's `shared_raw`, a buffer another sub-pool shares)
    and return, per part (row shapes in entry order), its layer views."""
    width = torch.empty(0, dtype=pool.store_dtype).element_size()
    sizes = [int(np.prod(shape)) * width for shape in parts]
    for row_bytes in sizes:
        if row_bytes % 16 != 0:
            raise ValueError(
                f"a unified pool needs every row to be a multiple of 16 bytes; this pool has a "
                f"{row_bytes}-byte row"
            )
    per_layer = sum(sizes)
    # A fused draft's sub-pool: its layers are lanes among other layers' rows of an entry.
    first_layer = getattr(pool, "first_layer", 0)
    pool.entry_bytes = entry_bytes(getattr(pool, "entry_layers", pool.layer_num), per_layer)
    shared = getattr(pool, "shared_raw", None)
    if shared is None:
        slots = pool.size + pool.page_size
        pool.raw = torch.zeros(slots * pool.entry_bytes, dtype=torch.uint8)
    else:  # a UnifiedSWAKVPool's sub-pool: its views span the whole shared buffer, in pages
        slots = shared.numel() // pool.entry_bytes // pool.page_size * pool.page_size
        pool.raw = shared
    elements = pool.raw.view(pool.store_dtype)
    views: list[list[torch.Tensor]] = [[] for _ in parts]
    for layer in range(pool.layer_num):
        start = (first_layer + layer) * per_layer
        for index, shape in enumerate(parts):
            inner = [int(np.prod(shape[axis + 1 :])) for axis in range(len(shape))]
            views[index].append(
                elements.as_strided(
                    (slots, *shape), (pool.entry_bytes // width, *inner), start // width
                )
            )
            start += sizes[index]
    return views


class UnifiedMHAJudgePool(MHAJudgePool):
    requires_physical_write_loc = True

    def _create_buffers(self) -> None:
        self.k_buffer, self.v_buffer = _entry(
            self, [(self.head_num, self.head_dim), (self.head_num, self.v_head_dim)]
        )

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _refuse_unmarked(loc_info, "set_kv_buffer (MHA)")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)


class UnifiedMLAJudgePool(MLAJudgePool):
    requires_physical_write_loc = True

    def _create_buffers(self) -> None:
        if not self.qk_rope_head_dim > 0:
            raise ValueError("a unified MLA pool needs qk_rope_head_dim > 0")
        (self.kv_buffer,) = _entry(self, [(1, self.kv_cache_dim)])

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _refuse_unmarked(loc_info, "set_kv_buffer (MLA)")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)

    def set_mla_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _refuse_unmarked(loc_info, "set_mla_kv_buffer (MLA)")
        super().set_mla_kv_buffer(layer, loc_info, *args, **kwargs)


judge_over_era_doors(UNIFIED_MHA, UnifiedMHAJudgePool)
judge_over_era_doors(UNIFIED_MLA, UnifiedMLAJudgePool)
