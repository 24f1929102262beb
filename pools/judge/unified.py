"""The judge's unified MHA pool, as SGLang 0.5.23's UnifiedMHATokenToKVPool over a UnifiedKVPool
(mem_cache/unified_memory_pool.py, layout/token_major.py):

- one uint8 buffer of (size + page_size) entries; a slot's entry is [K_0 | V_0 | K_1 | V_1 | ...],
  every K and V row a multiple of 16 bytes, the entry padded to a multiple of 32;
- layer l's K view is (slots, heads, head_dim) with the entry as slot stride, starting at byte
  l * (K row + V row); its V view starts one K row later;
- `requires_physical_write_loc`: set_kv_buffer refuses a loc that is not a KVWriteLoc marked
  physical with ValueError (memory_pool.py `_check_physical_write_loc`), before any byte moves.

Stores go row by row through the views (pools/judge/token_writes.py), so a slot's bytes land at
entry * slot + offset, and nothing writes the bytes between a layer's rows.
"""

from __future__ import annotations

from typing import Any

import torch

from pools.judge.token_major import MHAJudgePool


class UnifiedMHAJudgePool(MHAJudgePool):
    requires_physical_write_loc = True

    def _create_buffers(self) -> None:
        width = torch.finfo(self.store_dtype).bits // 8 if self.store_dtype.is_floating_point else 1
        k_bytes = self.head_num * self.head_dim * width
        v_bytes = self.head_num * self.v_head_dim * width
        for part, row_bytes in (("K", k_bytes), ("V", v_bytes)):
            if row_bytes % 16 != 0:
                raise ValueError(
                    f"a unified pool needs every KV row to be a multiple of 16 bytes; this pool "
                    f"has a {row_bytes}-byte {part} row"
                )
        per_layer = k_bytes + v_bytes
        entry = (self.layer_num * per_layer + 31) // 32 * 32
        slots = self.size + self.page_size
        self.entry_bytes = entry
        self.raw = torch.zeros(slots * entry, dtype=torch.uint8)
        elements = self.raw.view(self.store_dtype)
        self.k_buffer, self.v_buffer = [], []
        for layer in range(self.layer_num):
            for views, start, dim in (
                (self.k_buffer, layer * per_layer, self.head_dim),
                (self.v_buffer, layer * per_layer + k_bytes, self.v_head_dim),
            ):
                views.append(
                    elements.as_strided(
                        (slots, self.head_num, dim), (entry // width, dim, 1), start // width
                    )
                )

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        if not getattr(loc_info, "physical", False):  # a bare loc has no mark
            raise ValueError("set_kv_buffer (MHA): write loc is not marked physical")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)
