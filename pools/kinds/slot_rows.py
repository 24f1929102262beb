"""A layer's buffer, as a pool keeps it, read as one row per slot, so that every oracle compares
a slot's bytes wherever the kind's layout puts them: a view of the same memory where the layout
allows, else a copy. This is the harness's reading of SGLang's layouts, written apart from the
builtin pools' placement (pools/builtin/layouts), which tests/test_layouts.py checks against it.
"""

from __future__ import annotations

import torch

from pools.kinds.fixed_geometry import (
    DSA_INDEX_HEAD_DIM,
    DSA_INDEX_PAGE,
    DSV4_NOPE_DIM,
    DSV4_ROPE_DIM,
    NVFP4_PAGE,
    NVFP4_PAYLOAD,
    NVFP4_SCALES,
)


def kept(buffer: torch.Tensor) -> torch.Tensor:
    """A token-major buffer: row s is slot s already."""
    return buffer


def page_major_rows(buffer: torch.Tensor) -> torch.Tensor:
    """HND, (pages, heads, page_size, dim): slot s is buffer[s // P, :, s % P]."""
    return buffer.permute(0, 2, 1, 3).reshape(-1, buffer.shape[1], buffer.shape[3])


def aiter_key_rows(buffer: torch.Tensor) -> torch.Tensor:
    """aiter's 5-D K, (blocks, heads, dim // X, page, X): slot s is buffer[s // P, :, :, s % P]."""
    blocks, heads, groups, page, x = buffer.shape
    return buffer.permute(0, 3, 1, 2, 4).reshape(blocks * page, heads, groups * x)


def aiter_value_rows(buffer: torch.Tensor) -> torch.Tensor:
    """aiter's 5-D V, (blocks, heads, page // X, dim, X): slot s is buffer[b, :, o // X, :, o % X]
    with b, o = divmod(s, page)."""
    blocks, heads, groups, dim, x = buffer.shape
    return buffer.permute(0, 2, 4, 1, 3).reshape(blocks * groups * x, heads, dim)


def paged_token_rows(buffer: torch.Tensor) -> torch.Tensor:
    """The NPU's (pages, page_size, heads, dim) layer -> (slots, heads, dim), a view."""
    return buffer.reshape(-1, *buffer.shape[2:])


def dsa_index_rows(buffer: torch.Tensor) -> torch.Tensor:
    """A DSA indexer key cache, (pages, page * (128 + 4)) bytes, as a copy with one row per
    logical id: the id's 128 key bytes, then its 4 scale bytes. Every width is explicit, so a
    cache of no pages (a layer-split peer's layer) gives no rows too."""
    pages, keys = buffer.shape[0], DSA_INDEX_PAGE * DSA_INDEX_HEAD_DIM
    scale_bytes = (buffer.shape[1] - keys) // DSA_INDEX_PAGE
    key = buffer[:, :keys].reshape(pages, DSA_INDEX_PAGE, DSA_INDEX_HEAD_DIM)
    scale = buffer[:, keys:].reshape(pages, DSA_INDEX_PAGE, scale_bytes)
    row = DSA_INDEX_HEAD_DIM + scale_bytes
    return torch.cat([key, scale], dim=-1).reshape(pages * DSA_INDEX_PAGE, row)


# A DeepSeek V4 slot's bytes: fp8 NoPE and bf16 RoPE, then 7 scales and a pad byte (V4
# layout); or NoPE and RoPE as e4m3 (uniform FP8).
DSV4_DATA_ROW, DSV4_SCALE_ROW = DSV4_NOPE_DIM + 2 * DSV4_ROPE_DIM, DSV4_NOPE_DIM // 64 + 1
DSV4_UNIFORM_ROW = DSV4_NOPE_DIM + DSV4_ROPE_DIM


def dsv4_slot_rows(buffer: torch.Tensor, page_size: int) -> torch.Tensor:
    """A DeepSeek V4 layer as a copy with one row per slot. V4 layout, (pages, ceil(P * 584 /
    576) * 576) bytes: the slot's 576 data bytes at o * 576, then its 8 scale bytes (7 and a pad)
    at P * 576 + o * 8; the page tail past P * 584 is no slot's. Uniform FP8: 512 bytes a slot."""
    raw = buffer.view(torch.uint8)
    pages = raw.shape[0]
    if raw.shape[1] == page_size * DSV4_UNIFORM_ROW:
        return raw.reshape(pages * page_size, DSV4_UNIFORM_ROW)
    data = raw[:, : page_size * DSV4_DATA_ROW].reshape(pages, page_size, DSV4_DATA_ROW)
    scale_end = page_size * (DSV4_DATA_ROW + DSV4_SCALE_ROW)
    scale = raw[:, page_size * DSV4_DATA_ROW : scale_end].reshape(pages, page_size, DSV4_SCALE_ROW)
    return torch.cat([data, scale], dim=-1).reshape(pages * page_size, -1)


# A MiniMax M3 NVFP4 pool keeps one [layers, pages, row_bytes] uint8 slab per sub-pool
# (mem_cache/minimax_m3_nvfp4_pool.py); a (layer, page) row holds its components one after
# another, each at a 128-byte aligned offset: the main pool's K payload (heads, 128 tokens, 64),
# K scales (heads, 128, 8), V payload, V scales; the index pool's K payload (128, 64) and K
# scales (128, 8). Every component is a multiple of 128 bytes, so they abut: the slot rows are a
# permutation of the page row's bytes, every byte of the slab in one slot's row.
NVFP4_ROW_ALIGN = 128  # SGLang's _PAGE_ROW_ALIGN
NVFP4_MAIN_PARTS = (NVFP4_PAYLOAD, NVFP4_SCALES, NVFP4_PAYLOAD, NVFP4_SCALES)  # K, K scale, V, V's
NVFP4_INDEX_PARTS = (NVFP4_PAYLOAD, NVFP4_SCALES)  # index K, index K scale


def nvfp4_slot_rows(page_rows: torch.Tensor, heads: int, parts: tuple[int, ...]) -> torch.Tensor:
    """(pages, row_bytes) uint8 page rows -> (pages * 128, heads * sum(parts)) uint8: slot s's
    row is each component's (heads, width) bytes of token s % 128 of page s // 128, in order."""
    pages = page_rows.shape[0]
    columns, offset = [], 0
    for width in parts:
        size = heads * NVFP4_PAGE * width
        component = page_rows[:, offset : offset + size].reshape(pages, heads, NVFP4_PAGE, width)
        columns.append(component.permute(0, 2, 1, 3).reshape(pages * NVFP4_PAGE, heads * width))
        offset += -(-size // NVFP4_ROW_ALIGN) * NVFP4_ROW_ALIGN
    return torch.cat(columns, dim=1)
