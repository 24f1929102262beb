"""Pool geometries as serving produces them, shrinking toward one layer, one head, page size 1.

Large pools (last slot past 2^15, 2^16 or 2^17) are drawn with the narrowest rows (one head,
a few values a row, one layer, two on hybrid pools) so that they stay within the profile's byte
budget: a 2^17-slot pool of 16-byte rows is 2 MiB.
"""

from __future__ import annotations

from hypothesis import strategies as st

from pools.dtypes import dtype_spec
from scenarios.model import BASE_POOL_KINDS, MLA_POOL_KINDS, Geometry

PAGE_SIZES = (1, 16, 64, 128)
HEAD_NUMS = (1, 2, 4, 8, 32)
HEAD_DIMS = (64, 80, 96, 128, 192, 256)
V_HEAD_DIMS = (None, 128, 64)  # None: same as head_dim (DeepSeek MHA uses 192/128)
MLA_SHAPES = ((512, 64), (512, 0), (528, 64), (256, 32))  # (kv_lora_rank, qk_rope_head_dim)
MAX_SLOTS = 2**17 + 2**10
REACH = (2**15, 2**16, 2**17)  # a large pool's last slot passes one of these
NARROW_DIMS = (16, 8, 4, 2)  # a large base pool's head_dim (MLA: kv_lora_rank), widest first
MAX_LAYERS = 6
POOL_BYTES = 40 * 2**20  # default cap per pool, every layer and sub-pool together


def _row_bytes(g: Geometry) -> int:
    if g.is_fp4:  # half a byte a value, plus a scale byte per 16
        return (
            g.kv_lora_rank + g.qk_rope_head_dim if g.is_mla else 2 * g.head_num * g.head_dim
        ) * 9 // 16 + 1
    width = (
        g.kv_lora_rank + g.qk_rope_head_dim
        if g.is_mla
        else g.head_num * (g.head_dim + (g.v_head_dim or g.head_dim))
    )
    return width * dtype_spec(g.dtype).store_dtype.itemsize


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


LARGE_SWA_PAGES = 4  # a large hybrid pool's SWA sub-pool: a few pages


def _large_rows(reach: int, page_size: int, pattern: list[bool]) -> int:
    """Rows of a large pool over all its layers, every sub-pool with its extra page."""
    full, swa = pattern.count(False), pattern.count(True)
    return (reach + 2 * page_size) * full + (LARGE_SWA_PAGES + 1) * page_size * swa


def _narrow_shape(pool: str, dtype: str, rows: int, pool_bytes: int) -> dict:
    """The widest NARROW_DIMS shape of a base pool kind whose `rows` rows fit in `pool_bytes`
    (the narrowest when none does)."""
    for width in NARROW_DIMS:
        shape = (
            {"kv_lora_rank": width, "qk_rope_head_dim": 0}
            if pool in MLA_POOL_KINDS
            else {"head_num": 1, "head_dim": width, "v_head_dim": None}
        )
        probe = Geometry(pool=pool, dtype=dtype, size=1, page_size=1, layer_num=1, **shape)
        if _row_bytes(probe) * rows <= pool_bytes:
            break
    return shape


@st.composite
def geometries(draw: st.DrawFn, pool: str, dtype: str, pool_bytes: int = POOL_BYTES) -> Geometry:
    """A geometry; one draw in three is a large pool (its last slot past 2^15, 2^16 or 2^17 when
    the byte budget allows), which takes the narrowest rows and fewest layers so that it fits."""
    large = draw(st.sampled_from((False, False, True)))
    reach = draw(st.sampled_from(REACH + REACH[-1:])) if large else 0  # 2^17 twice as often
    pattern = (
        [False, True]
        if large and pool.startswith("swa_")
        else ([False] if large else draw(layer_patterns(pool.startswith("swa_"))))
    )
    layer_num = len(pattern)
    swa_layer_ids = [layer for layer, is_swa in enumerate(pattern) if is_swa]
    shape: dict = {}
    if large and pool in BASE_POOL_KINDS:
        shape = _narrow_shape(pool, dtype, _large_rows(reach, PAGE_SIZES[-1], pattern), pool_bytes)
    elif pool in MLA_POOL_KINDS:  # every MLA shape is an FP4 block (16) multiple
        shape["kv_lora_rank"], shape["qk_rope_head_dim"] = (
            MLA_SHAPES[1] if large else draw(st.sampled_from(MLA_SHAPES))
        )
    else:
        shape["head_num"] = HEAD_NUMS[0] if large else draw(st.sampled_from(HEAD_NUMS))
        shape["head_dim"] = HEAD_DIMS[0] if large else draw(st.sampled_from(HEAD_DIMS))
        v_head_dim = None if large else draw(st.sampled_from(V_HEAD_DIMS))
        shape["v_head_dim"] = (
            v_head_dim if v_head_dim != shape["head_dim"] and pool != "mha_fp4" else None
        )
    # page_size == head_num is its own case: a transposed page-major write looks right there.
    page_size = draw(st.sampled_from(PAGE_SIZES + ("head_num",)))
    page_size = shape.get("head_num", 1) if page_size == "head_num" else page_size
    if pool == "mha_aiter5d":  # vectorized_5d: page_size % X (16 bytes / element); dims are x16
        page_size = max(16, page_size - page_size % 16)
    probe = Geometry(
        pool=pool,
        dtype=dtype,
        size=1,
        page_size=page_size,
        layer_num=layer_num,
        swa_layer_ids=swa_layer_ids,
        **shape,
    )
    if large:
        # Pages 1..pages are handed out, so the last slot is pages * page_size + page_size - 1:
        # past `reach` from pages == reach // page_size on, where the byte budget allows.
        fits = pool_bytes // _row_bytes(probe) - _large_rows(0, page_size, pattern)
        max_pages = max(1, min(MAX_SLOTS, fits // (layer_num - len(swa_layer_ids))) // page_size)
        first = min(max_pages, reach // page_size)
        pages = draw(st.integers(first, min(max_pages, first + 3)))
        swa_pages = min(LARGE_SWA_PAGES, max(1, pages - 1))
    else:
        max_pages = max(
            1, min(MAX_SLOTS, pool_bytes // (_row_bytes(probe) * layer_num)) // page_size
        )
        pages = draw(st.integers(1, max_pages))
        swa_pages = max(1, pages - 1)
    size_swa = page_size * draw(st.integers(1, swa_pages)) if swa_layer_ids else 0
    return Geometry(
        pool=pool,
        dtype=dtype,
        size=pages * page_size,
        page_size=page_size,
        layer_num=layer_num,
        swa_layer_ids=swa_layer_ids,
        size_swa=size_swa,
        **shape,
    )
