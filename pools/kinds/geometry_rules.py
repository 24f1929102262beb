"""What a kind's SGLang constructor or store asserts of a geometry, as rules its record names
(PoolKind.geometry_rules): each returns why a geometry cannot be that kind's, or None.
scenarios/serialize.py applies a kind's rules after the ones every FP4 or unified SWA kind
shares, so a user's scenario file is refused with the constructor's reason."""

from __future__ import annotations

from typing import Any, Optional

from pools.dtypes import dtype_spec


def whole_pages(g: Any) -> Optional[str]:
    """A page-major or one-tensor layout keeps whole pages (pools/builtin/layouts)."""
    if g.size % g.page_size:
        return f"{g.pool} needs size a multiple of page_size ({g.size} % {g.page_size})"
    return None


def aiter_5d_widths(g: Any) -> Optional[str]:
    """aiter's 5-D cache splits head_dim, v_head_dim and the page into X-element words."""
    x = 16 // dtype_spec(g.dtype).store_dtype.itemsize
    if any(width % x for width in (g.head_dim, g.v_head_dim or g.head_dim, g.page_size)):
        return f"{g.pool} needs head_dim, v_head_dim and page_size divisible by X = {x}"
    return None


def unified_latent_row(g: Any) -> Optional[str]:
    """A unified MLA entry holds a rope part and a latent row of whole 16-byte words."""
    item = dtype_spec(g.dtype).store_dtype.itemsize
    if g.qk_rope_head_dim <= 0 or (g.kv_lora_rank + g.qk_rope_head_dim) * item % 16:
        return f"{g.pool} needs a rope part and a latent row (rank + rope) in 16 bytes"
    return None


def unified_kv_rows(g: Any) -> Optional[str]:
    """A unified MHA entry holds K and V rows of whole 16-byte words."""
    item = dtype_spec(g.dtype).store_dtype.itemsize
    if any(g.head_num * width * item % 16 for width in (g.head_dim, g.v_head_dim or g.head_dim)):
        return f"{g.pool} needs every K and V row (heads x dim x element size) in 16 bytes"
    return None


def v_with_head_dim(g: Any) -> Optional[str]:
    """HiSparse's MHA main pool stores V with head_dim."""
    if g.v_head_dim not in (None, g.head_dim):
        return "a HiSparse MHA pool stores V with head_dim"
    return None
