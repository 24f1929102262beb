"""A MiniMax M3 NVFP4 pool's page rows read as one row per slot, so that every oracle compares
them as it compares token-major buffers.

SGLang (mem_cache/minimax_m3_nvfp4_pool.py) keeps one [layers, pages, row_bytes] uint8 slab per
sub-pool; a (layer, page) row holds its components one after another, each at a 128-byte
aligned offset: the main pool's K payload (heads, 128 tokens, 64), K scales (heads, 128, 8),
V payload, V scales; the index pool's K payload (128, 64) and K scales (128, 8). Every
component is a multiple of 128 bytes (heads x 128 tokens x 64 or 8), so they abut: the slot
rows below are a permutation of the page row's bytes, every byte of the slab in one slot's row.
"""

from __future__ import annotations

import torch

from scenarios.model import NVFP4_PAGE, NVFP4_PAYLOAD, NVFP4_SCALES

ROW_ALIGN = 128  # SGLang's _PAGE_ROW_ALIGN
MAIN_PARTS = (NVFP4_PAYLOAD, NVFP4_SCALES, NVFP4_PAYLOAD, NVFP4_SCALES)  # K, K scale, V, V scale
INDEX_PARTS = (NVFP4_PAYLOAD, NVFP4_SCALES)  # index K, index K scale


def slot_rows(page_rows: torch.Tensor, heads: int, parts: tuple[int, ...]) -> torch.Tensor:
    """(pages, row_bytes) uint8 page rows -> (pages * 128, heads * sum(parts)) uint8: slot s's
    row is each component's (heads, width) bytes of token s % 128 of page s // 128, in order."""
    pages = page_rows.shape[0]
    columns, offset = [], 0
    for width in parts:
        size = heads * NVFP4_PAGE * width
        component = page_rows[:, offset : offset + size].reshape(pages, heads, NVFP4_PAGE, width)
        columns.append(component.permute(0, 2, 1, 3).reshape(pages * NVFP4_PAGE, heads * width))
        offset += -(-size // ROW_ALIGN) * ROW_ALIGN
    return torch.cat(columns, dim=1)
