"""Storage for SGLang 0.5.23's unified MHA pool (mem_cache/unified_memory_pool.py): every layer's
K and V rows of a slot live side by side in one entry of one byte buffer, and each layer's
`k_buffer` / `v_buffer` is a strided view into it (slot stride = the whole entry, more than
heads x dim). Its doors take physical ids only: a loc not marked physical is refused.

Era front-ends come from pools.builtin_sut (the era's MHATokenToKVPool after this class in the
MRO, so the physical check runs first, then the era's set_kv_buffer parses the loc).
"""

from __future__ import annotations

from typing import Any

import torch

from pools.dense_storage import MHAStorage

ROW_BYTES = 16  # every K and V row is a whole number of these (SGLang's ROW_ALIGN_BYTES)
ENTRY_BYTES = 32  # a slot's entry is padded to a whole number of these (ENTRY_ALIGN_BYTES)


def _rounded_up(count: int, unit: int) -> int:
    return -(-count // unit) * unit


class UnifiedMHAStorage(MHAStorage):
    kv_cache_layout = "unified"

    def _create_buffers(self) -> None:
        item = torch.empty((), dtype=self.store_dtype).element_size()
        k_row = self.head_num * self.head_dim * item
        v_row = self.head_num * self.v_head_dim * item
        for part, row in (("K", k_row), ("V", v_row)):
            if row % ROW_BYTES:
                raise ValueError(
                    f"a unified pool needs every KV row to be a multiple of {ROW_BYTES} bytes; "
                    f"this pool has a {row}-byte {part} row"
                )
        self.entry_bytes = _rounded_up(self.layer_num * (k_row + v_row), ENTRY_BYTES)
        slots = self.size + self.page_size
        self.raw = torch.zeros(slots * self.entry_bytes, dtype=torch.uint8, device=self.device)
        typed = self.raw.view(self.store_dtype)
        slot_stride = self.entry_bytes // item

        def view(offset_bytes: int, dim: int) -> torch.Tensor:
            return torch.as_strided(
                typed, (slots, self.head_num, dim), (slot_stride, dim, 1), offset_bytes // item
            )

        layer_bytes = k_row + v_row
        self.k_buffer = [
            view(layer * layer_bytes, self.head_dim) for layer in range(self.layer_num)
        ]
        self.v_buffer = [
            view(layer * layer_bytes + k_row, self.v_head_dim) for layer in range(self.layer_num)
        ]

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        if not getattr(loc_info, "physical", False):
            raise ValueError(
                "set_kv_buffer (MHA): write loc is not marked physical. Hand the pool "
                "KVWriteLoc.for_batch(forward_batch) or KVWriteLoc(loc, physical=True)"
            )
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)
