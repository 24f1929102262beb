"""Pool geometries as serving produces them, shrinking toward one layer, one head, page size 1.

Large pools (last slot past 2^15, 2^16 or 2^17) are drawn with the narrowest rows the pool kind
accepts (one head, a few values a row, one layer, two on hybrid pools) so that they stay within
the profile's byte budget: a 2^17-slot pool of 16-byte rows is 2 MiB.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from hypothesis import strategies as st

from pools.builtin.fp4.quantiser import BLOCK as FP4_BLOCK
from pools.dtypes import dtype_spec
from pools.kinds.composite import DSV4_UNIFORM_FP8
from pools.kinds.fixed_geometry import (
    DSV4_NOPE_DIM,
    DSV4_PAGE,
    DSV4_ROPE_DIM,
    NVFP4_HEAD_DIM,
    NVFP4_PAGE,
    NVFP4_PAYLOAD,
    NVFP4_SCALES,
    QSA_COMPRESS_RATIO,
)
from pools.kinds.registry import KINDS, kinds_where
from scenarios.model import (
    DSA_INDEX_KINDS,
    DSV4_KINDS,
    LINEAR_LAYER_KINDS,
    MLA_POOL_KINDS,
    NVFP4_PAGE_ROW_KINDS,
    QSA_KINDS,
    SPARSE_INDEX_KINDS,
    UNIFIED_SWA_KINDS,
    Geometry,
)
from scenarios.strategies.built_once import sampled

PAGE_SIZES = (1, 16, 64, 128)
HEAD_NUMS = (1, 2, 4, 8, 32)
HEAD_DIMS = (64, 80, 96, 128, 192, 256)
V_HEAD_DIMS = (None, 128, 64)  # None: same as head_dim (DeepSeek MHA uses 192/128)
MLA_SHAPES = ((512, 64), (512, 0), (528, 64), (256, 32))  # (kv_lora_rank, qk_rope_head_dim)
MAX_SLOTS = 2**17 + 2**10
REACH = (2**15, 2**16, 2**17)  # a large pool's last slot passes one of these
NARROW_DIMS = (16, 8, 4, 2)  # a large pool's head_dim (MLA: kv_lora_rank), widest first
MAX_LAYERS = 6
INDEX_HEAD_DIMS = (128, 64, 16)  # a MiniMax sparse layer's index head (MiniMax-M3: 128)
# MLA kinds whose rope part is never empty: their records say so (PoolKind.rope_required), and a
# DSA write always has one.
ROPE_KINDS = kinds_where(lambda kind: kind.rope_required or kind.dsa_index)
POOL_BYTES = 40 * 2**20  # default cap per pool, every layer and sub-pool together


def reach_budget(pool: str, pool_bytes: int) -> int:
    """The byte budget of a large pool of kind `pool`: `pool_bytes`, or the kind's floor (a kind
    whose narrowest row is fixed wider than a small budget holds at 2^17 slots: its record's
    reach_floor_bytes; SGLang's constructors accept nothing narrower)."""
    return max(pool_bytes, KINDS[pool].reach_floor_bytes)


def _row_bytes(g: Geometry) -> int:
    if g.kind.dsv4 and g.pool != DSV4_UNIFORM_FP8.name:  # fp8 nope, bf16 rope, 7 scales, a pad
        return DSV4_NOPE_DIM + 2 * DSV4_ROPE_DIM + DSV4_NOPE_DIM // 64 + 1
    if g.kind.nvfp4_page_rows:  # K, V and the index K of a slot, each payload and scale bytes
        return (2 * g.head_num + 1) * (NVFP4_PAYLOAD + NVFP4_SCALES)
    if g.kind.fp4:  # half a byte a value, plus a scale byte per 16
        return (
            g.kv_lora_rank + g.qk_rope_head_dim if g.kind.latent else 2 * g.head_num * g.head_dim
        ) * 9 // 16 + 1
    width = (
        g.kv_lora_rank + g.qk_rope_head_dim
        if g.kind.latent
        else g.head_num * (g.head_dim + (g.v_head_dim or g.head_dim)) + 2 * g.index_head_dim
    )
    return width * dtype_spec(g.dtype).store_dtype.itemsize


@lru_cache(maxsize=None)  # one strategy object per argument (built_once.py)
@st.composite
def layer_patterns(draw: st.DrawFn, swa: bool) -> list[bool]:
    """Is-SWA flag per layer: for a hybrid pool, SWA and full layers interleaved in any pattern
    with one of each at least (shrinks to [full, swa]); otherwise 1..MAX_LAYERS full layers."""
    if not swa:
        return [False] * draw(st.integers(1, MAX_LAYERS))
    pattern = draw(st.lists(st.booleans(), min_size=2, max_size=MAX_LAYERS))
    if all(pattern) or not any(pattern):
        pattern[-1] = not pattern[-1]
    return pattern


def _two_sided(pool: str) -> bool:
    """A kind whose layers are of two sorts: SWA and full, linear and full attention, or sparse
    and dense."""
    return KINDS[pool].swa or pool in LINEAR_LAYER_KINDS + SPARSE_INDEX_KINDS


def _sides(pool: str, pattern: list[bool]) -> tuple[list[int], list[int]]:
    """(SWA layer ids, linear-attention layer ids) of a layer pattern's flagged layers."""
    flagged = [layer for layer, flag in enumerate(pattern) if flag]
    if pool in SPARSE_INDEX_KINDS:
        return [], []
    return ([], flagged) if pool in LINEAR_LAYER_KINDS else (flagged, [])


def _sparse(pool: str, pattern: list[bool], k_only: list[bool], index_head_dim: int) -> dict:
    """A MiniMax sparse pool's sparse layers (the flagged ones), those of them whose index keeps
    no V (`k_only`, one flag per sparse layer) and its index head width; {} for other kinds."""
    if pool not in SPARSE_INDEX_KINDS:
        return {}
    sparse = [layer for layer, flag in enumerate(pattern) if flag]
    return dict(
        sparse_layer_ids=sparse,
        k_only_layer_ids=[layer for layer, flag in zip(sparse, k_only) if flag],
        index_head_dim=index_head_dim,
    )


LARGE_SWA_PAGES = 4  # a large hybrid pool's SWA sub-pool: a few pages


def _large_rows(
    reach: int, page_size: int, pattern: list[bool], swa_pages: int = LARGE_SWA_PAGES
) -> int:
    """Rows of a large pool over all its layers, every sub-pool with its extra page."""
    full, swa = pattern.count(False), pattern.count(True)
    return (reach + 2 * page_size) * full + (swa_pages + 1) * page_size * swa


def _row_multiple(pool: str, dtype: str) -> int:
    """What a row width must be a multiple of in this pool kind's storage: FP4 packs 16-value
    blocks, and aiter's 5-D layout splits rows into 16-byte words."""
    kind = KINDS[pool]
    if kind.fp4:
        return FP4_BLOCK
    if kind.word_rows:
        return 16 // dtype_spec(dtype).store_dtype.itemsize
    return 1


def _narrow(pool: str, width: int) -> dict:
    if pool in DSV4_KINDS:  # one width: its large pools get its reach floor
        return {"kv_lora_rank": DSV4_NOPE_DIM, "qk_rope_head_dim": DSV4_ROPE_DIM}
    if pool in ROPE_KINDS:
        return {"kv_lora_rank": width, "qk_rope_head_dim": width}
    if pool in MLA_POOL_KINDS:
        return {"kv_lora_rank": width, "qk_rope_head_dim": 0}
    if pool in SPARSE_INDEX_KINDS:  # the index rows as wide, so that the budget counts them
        return {"head_num": 1, "head_dim": width, "v_head_dim": None, "index_head_dim": width}
    if pool in NVFP4_PAGE_ROW_KINDS:  # its heads are 128 wide, no narrower
        return {"head_num": 1, "head_dim": NVFP4_HEAD_DIM, "v_head_dim": None}
    return {"head_num": 1, "head_dim": width, "v_head_dim": None}


def _narrow_shape(pool: str, dtype: str, rows: int, pool_bytes: int) -> dict:
    """The widest NARROW_DIMS shape the pool kind's storage accepts whose `rows` rows fit in
    `pool_bytes` (the narrowest accepted when none does)."""
    multiple = _row_multiple(pool, dtype)
    widths = [width for width in NARROW_DIMS if width % multiple == 0] or [multiple]
    for width in widths:
        shape = _narrow(pool, width)
        probe = Geometry(pool=pool, dtype=dtype, size=1, page_size=1, layer_num=1, **shape)
        if _row_bytes(probe) * rows <= pool_bytes:
            break
    return shape


def kind_page_size(pool: str, page_size: int) -> int:
    """A DSA pool's pages hold 64 tokens, as a DeepSeek V4 pool's do; a QSA pool's are a multiple
    of the compress ratio, above 1; a kind's record may ask a multiple of its own (aiter's 5-D
    layout: 16, at least 16)."""
    if pool in DSA_INDEX_KINDS:
        return 64
    if pool in DSV4_KINDS:
        return DSV4_PAGE
    if pool in NVFP4_PAGE_ROW_KINDS:
        return NVFP4_PAGE
    if pool in QSA_KINDS:
        return max(QSA_COMPRESS_RATIO, page_size - page_size % QSA_COMPRESS_RATIO)
    multiple = KINDS[pool].page_multiple
    return max(multiple, page_size - page_size % multiple)


def large_geometry(
    pool: str,
    dtype: str,
    reach: int,
    page_size: int,
    pool_bytes: int,
    extra_pages: int = 0,
    swa_pages: int = LARGE_SWA_PAGES,
) -> Geometry:
    """A pool whose last slot passes `reach` where `pool_bytes` allows (the largest that fits
    otherwise), `extra_pages` more pages past it: the narrowest rows the kind accepts, one full
    layer (and one SWA layer of `swa_pages` pages on hybrid pools). A kind with a fixed row
    wider than the budget allows at `reach` gets its floor instead (reach_budget)."""
    pool_bytes = reach_budget(pool, pool_bytes)
    # A sparse pool: one sparse layer whose index keeps no V, within an fp32 budget (its main
    # K/V rows are the main pool's, as a dense layer's; its index K the K-only pool's).
    pattern = [True] if pool in SPARSE_INDEX_KINDS else [False, True]
    pattern = pattern if _two_sided(pool) else [False]
    page_size = kind_page_size(pool, page_size)
    # A linear layer keeps no rows: only the SWA kinds' flagged layers are rows of their own, and
    # a sparse pool's layers are all full-height rows (its index rows are in _row_bytes).
    kv_layers = len(pattern) - len(_sides(pool, pattern)[1])
    rows_pattern = pattern if KINDS[pool].swa else [False] * kv_layers
    shape = _narrow_shape(
        pool, dtype, _large_rows(reach, PAGE_SIZES[-1], rows_pattern, swa_pages), pool_bytes
    )
    swa_layer_ids, linear_layer_ids = _sides(pool, pattern)
    sparse = _sparse(pool, pattern, [True], shape.pop("index_head_dim", 0))
    probe = Geometry(
        pool=pool, dtype=dtype, size=1, page_size=page_size, layer_num=len(pattern), **shape,
        **sparse,
    )  # fmt: skip
    # Pages 1..pages are handed out, so the last slot is pages * page_size + page_size - 1:
    # past `reach` from pages == reach // page_size on, where the byte budget allows.
    fits = pool_bytes // _row_bytes(probe) - _large_rows(0, page_size, rows_pattern, swa_pages)
    max_pages = max(1, min(MAX_SLOTS, fits) // page_size)
    pages = min(max_pages, reach // page_size + extra_pages)
    swa_pages = min(swa_pages, max(1, pages - 1))
    return Geometry(
        pool=pool,
        dtype=dtype,
        size=pages * page_size,
        page_size=page_size,
        layer_num=len(pattern),
        swa_layer_ids=swa_layer_ids,
        size_swa=page_size * swa_pages if swa_layer_ids else 0,
        linear_layer_ids=linear_layer_ids,
        **shape,
        **sparse,
    )


def _mla_shapes(pool: str) -> tuple[tuple[int, int], ...]:
    if pool in DSV4_KINDS:
        return ((DSV4_NOPE_DIM, DSV4_ROPE_DIM),)
    if pool in ROPE_KINDS:
        return tuple(shape for shape in MLA_SHAPES if shape[1])
    return MLA_SHAPES


@lru_cache(maxsize=None)  # one strategy object per argument (built_once.py)
@st.composite
def geometries(draw: st.DrawFn, pool: str, dtype: str, pool_bytes: int = POOL_BYTES) -> Geometry:
    """A geometry; one draw in three is a large pool (large_geometry: its last slot past 2^15,
    2^16 or 2^17 when the byte budget allows). A small pool's choices are drawn first in both
    cases, so a large pool is never the shorter choice sequence, which Hypothesis's shrinker
    would take for the simpler: a minimal failing scenario is a small pool where one fails."""
    pattern = draw(layer_patterns(_two_sided(pool)))
    if pool in UNIFIED_SWA_KINDS and pattern.count(True) > pattern.count(False):
        pattern = [not swa for swa in pattern]  # no more SWA layers than full ones (serialize)
    swa_layer_ids, linear_layer_ids = _sides(pool, pattern)
    shape: dict = {}
    if pool in MLA_POOL_KINDS:  # every MLA shape is an FP4 block (16) multiple
        shape["kv_lora_rank"], shape["qk_rope_head_dim"] = draw(sampled(_mla_shapes(pool)))
    else:
        shape["head_num"] = draw(sampled(HEAD_NUMS))
        shape["head_dim"] = draw(sampled(HEAD_DIMS))
        if pool in NVFP4_PAGE_ROW_KINDS:
            shape["head_dim"] = NVFP4_HEAD_DIM
        v_head_dim = draw(sampled(V_HEAD_DIMS))
        shape["v_head_dim"] = (
            v_head_dim if v_head_dim != shape["head_dim"] and not KINDS[pool].v_as_k else None
        )
    sparse = {}
    if pool in SPARSE_INDEX_KINDS:
        k_only = draw(
            st.lists(st.booleans(), min_size=pattern.count(True), max_size=pattern.count(True))
        )
        sparse = _sparse(pool, pattern, k_only, draw(sampled(INDEX_HEAD_DIMS)))
    # page_size == head_num is its own case: a transposed page-major write looks right there.
    page_size = draw(sampled(PAGE_SIZES + ("head_num",)))
    asked = shape.get("head_num", 1) if page_size == "head_num" else page_size
    page_size = kind_page_size(pool, asked)
    if draw(sampled((False, False, True))):
        reach = draw(sampled(REACH + REACH[-1:]))  # 2^17 twice as often
        large_page_size = draw(sampled(PAGE_SIZES))
        extra_pages = draw(st.integers(0, 3))
        large = large_geometry(pool, dtype, reach, large_page_size, pool_bytes, extra_pages)
        if not large.swa_layer_ids:
            return large
        swa_pages = draw(st.integers(1, large.size_swa // large.page_size))
        return replace(large, size_swa=large.page_size * swa_pages)
    probe = Geometry(
        pool=pool,
        dtype=dtype,
        size=1,
        page_size=page_size,
        layer_num=len(pattern),
        swa_layer_ids=swa_layer_ids,
        **shape,
        **sparse,
    )
    max_pages = max(
        1, min(MAX_SLOTS, pool_bytes // (_row_bytes(probe) * len(pattern))) // page_size
    )
    pages = draw(st.integers(1, max_pages))
    size_swa = page_size * draw(st.integers(1, max(1, pages - 1))) if swa_layer_ids else 0
    return Geometry(
        pool=pool,
        dtype=dtype,
        size=pages * page_size,
        page_size=page_size,
        layer_num=len(pattern),
        swa_layer_ids=swa_layer_ids,
        size_swa=size_swa,
        linear_layer_ids=linear_layer_ids,
        **shape,
        **sparse,
    )
