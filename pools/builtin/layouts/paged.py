"""Where a slot's (heads, dim) row lives in a paged buffer, for each layout, as data.

A layout gives (a) `place(slot)`: the index of one slot's row, for an obviously correct
token-at-a-time write; (b) `index(slots)`: the same for many slots at once (advanced indexing).
Out-of-range slots raise IndexError in every engine. How a snapshot reads a layer back as slot
rows is the kind's record's (pools/kinds/slot_rows.py), written apart from this placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

SLICE = slice(None)


def check_slots(slots: torch.Tensor, total: int) -> torch.Tensor:
    slots = slots.long()
    if slots.numel() and (int(slots.min()) < 0 or int(slots.max()) >= total):
        raise IndexError(f"slot out of range [0, {total}) for a paged layout")
    return slots


@dataclass(frozen=True)
class Layout:
    name: str
    description: str

    def slots(self, buffer: torch.Tensor) -> int:
        raise NotImplementedError

    def place(self, buffer: torch.Tensor, slot: int) -> tuple:
        raise NotImplementedError

    def index(self, buffer: torch.Tensor, slots: torch.Tensor) -> tuple:
        raise NotImplementedError

    def rows(self, rows: torch.Tensor) -> torch.Tensor:
        """The caller's (n, heads, dim) rows shaped as buffer[index(slots)] is."""
        return rows


class HND(Layout):
    """(pages, heads, page_size, dim): slot s is buffer[s // P, :, s % P] (SGLang use_hnd)."""

    def slots(self, buffer):
        return buffer.shape[0] * buffer.shape[2]

    def place(self, buffer, slot):
        page, offset = divmod(slot, buffer.shape[2])
        return page, SLICE, offset

    def index(self, buffer, slots):
        slots = check_slots(slots, self.slots(buffer))
        return slots // buffer.shape[2], SLICE, slots % buffer.shape[2]


class Aiter5DKey(Layout):
    """K as (blocks, heads, dim // X, page, X): slot s is buffer[s // P, :, :, s % P, :]."""

    def slots(self, buffer):
        return buffer.shape[0] * buffer.shape[3]

    def place(self, buffer, slot):
        block, offset = divmod(slot, buffer.shape[3])
        return block, SLICE, SLICE, offset

    def index(self, buffer, slots):
        slots = check_slots(slots, self.slots(buffer))
        return slots // buffer.shape[3], SLICE, SLICE, slots % buffer.shape[3]

    def rows(self, rows):
        return rows.reshape(rows.shape[0], rows.shape[1], -1, 16 // rows.element_size())


class Aiter5DValue(Layout):
    """V as (blocks, heads, page // X, dim, X): slot s is buffer[b, :, o // X, :, o % X]."""

    def slots(self, buffer):
        return buffer.shape[0] * buffer.shape[2] * buffer.shape[4]

    def place(self, buffer, slot):
        block, offset = divmod(slot, buffer.shape[2] * buffer.shape[4])
        return block, SLICE, offset // buffer.shape[4], SLICE, offset % buffer.shape[4]

    def index(self, buffer, slots):
        slots = check_slots(slots, self.slots(buffer))
        page = buffer.shape[2] * buffer.shape[4]
        offset = slots % page
        return slots // page, SLICE, offset // buffer.shape[4], SLICE, offset % buffer.shape[4]


HND_LAYOUT = HND("hnd", "page-major: (pages, heads, page_size, dim)")
AITER_K = Aiter5DKey("aiter5d", "aiter vectorized_5d K: (blocks, heads, dim/X, page, X)")
AITER_V = Aiter5DValue("aiter5d", "aiter vectorized_5d V: (blocks, heads, page/X, dim, X)")


def vector_width(store_dtype: torch.dtype) -> int:
    """aiter's X = 16 bytes / element size."""
    return 16 // torch.empty((), dtype=store_dtype).element_size()
