"""Slot ids drawn the way SGLang's paged allocators hand them out.

Page 0 is never handed out (slot 0 is the padding sink); a request gets whole pages, its last
page possibly partial; the SWA allocator maps only the window's tail, the rest to 0.
"""

from __future__ import annotations

import random


def allocate(rng: random.Random, size: int, page_size: int, tokens: int) -> list[int]:
    """`tokens` distinct slot ids in token order, on random pages from [1, size // page_size]."""
    pages_needed = -(-tokens // page_size)
    pages = rng.sample(range(1, size // page_size + 1), pages_needed)
    slots = [page * page_size + offset for page in pages for offset in range(page_size)]
    return slots[:tokens]


def swa_mapping(
    rng: random.Random, size: int, page_size: int, size_swa: int, full_slots: list[int], window: int
) -> list[int]:
    """full_to_swa mapping of size + page_size entries: the last `window` of `full_slots` get
    SWA slots from the SWA allocator, every other entry is 0 (unmapped, the sink)."""
    mapping = [0] * (size + page_size)
    in_window = full_slots[-window:] if window else []
    swa_slots = allocate(rng, size_swa, page_size, len(in_window))
    # A full slot that maps to its own id hides the translation: a writer that skips it writes
    # the right slot. Rotating the SWA slots among the window removes such fixed points.
    for _ in range(len(swa_slots) - 1):
        if all(full != swa for full, swa in zip(in_window, swa_slots)):
            break
        swa_slots = swa_slots[1:] + swa_slots[:1]
    for full_slot, swa_slot in zip(in_window, swa_slots):
        mapping[full_slot] = swa_slot
    return mapping
