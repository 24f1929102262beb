"""The plain call site: each era's canonical write, with no backend quirks.

`plain` writes MLA pools through set_kv_buffer (the combined row, no scales); `plain_mla`
through set_mla_kv_buffer (nope and rope as separate tensors).
"""

from __future__ import annotations

from backends import skips
from backends.context import WriteRequest
from backends.dsa_indexer import store_index_keys
from backends.entry import ValueScope, register_backend
from backends.era_calls import loc_arguments
from backends.focus import BUILTIN_SCENARIOS, LAYOUT_DTYPES, LOC_LIVES
from pools.builtin.layouts.kinds import LAYOUT_KINDS
from pools.kinds.hybrid import (
    HISPARSE_DSA,
    HYBRID_LINEAR_DSA,
    HYBRID_LINEAR_MLA,
    PAGE_INTERLEAVE_MLA,
)
from pools.kinds.layout import (
    MHA_AITER5D,
    MHA_CPU_FP8,
    MHA_FP4,
    MHA_HND,
    MLA_FP4,
    NPU_MHA,
    NPU_MLA,
    UNIFIED_MHA,
    UNIFIED_MLA,
)
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA, SWA_MLA
from scenarios.model import (
    BASE_POOL_KINDS,
    HISPARSE_KINDS,
    HYBRID_LINEAR_KINDS,
    LAYER_SPLIT_KINDS,
    PAGE_INTERLEAVE_KINDS,
    UNIFIED_SWA_KINDS,
)

PLAIN_FOCUS = {
    "extend": BUILTIN_SCENARIOS[:6]
    + ("small-param-none", "small-cross", "reach", "extreme-scaled", "special-values")
    + ("stale-full-loc", "nan-padding", "unmarked-loc", "pipeline-rank")
    + LOC_LIVES
}
"""`plain` and `plain_mla`: the pool-sized set, plus what the small set adds to it."""

PLAIN_LAYOUT_KINDS = names(
    MHA_FP4, MLA_FP4, MHA_HND, NPU_MHA, MHA_AITER5D, UNIFIED_MHA, UNIFIED_MLA, MHA_CPU_FP8
)
"""The layout kinds `plain` writes through set_kv_buffer (npu_mla means (nope, rope) there)."""

PLAIN_MLA_LAYOUT_KINDS = names(MLA_FP4, NPU_MLA, UNIFIED_MLA)
"""The layout kinds `plain_mla` writes through its (nope, rope) door."""

PLAIN_MLA_KINDS = names(MLA, SWA_MLA, HYBRID_LINEAR_MLA, HYBRID_LINEAR_DSA, PAGE_INTERLEAVE_MLA)
"""The other kinds `plain_mla` writes."""


SUBSET_KINDS = (
    PLAIN_LAYOUT_KINDS
    + PLAIN_MLA_LAYOUT_KINDS
    + HYBRID_LINEAR_KINDS
    + PAGE_INTERLEAVE_KINDS
    + UNIFIED_SWA_KINDS
    + LAYER_SPLIT_KINDS
    + names(HISPARSE_DSA)  # its casts are judged through the dsa call site, every dtype
)
"""The kinds `plain` and `plain_mla` run on LAYOUT_DTYPES only (docs/notes/layout-dtypes.md)."""


PLAIN_KIND_DTYPES = {
    kind: (LAYOUT_KINDS[kind].dtypes if kind in LAYOUT_KINDS else ()) or LAYOUT_DTYPES
    for kind in SUBSET_KINDS
}
"""The dtypes the subset kinds are judged on through `plain` and `plain_mla`: no other cell of
theirs is planned."""
PLAIN_KIND_DTYPES_REASON = (
    "the layout and unified SWA kinds test where a slot's bytes land, the hybrid linear kinds "
    "which layer and loc a write reaches and the page-interleave kinds which tokens a rank keeps, "
    "and where; every cast is covered by the base kinds, an FP4 pool's dtype is packed e2m1 "
    "whatever the caller's, and a CPU server quantizes its cache only in fp8_e4m3 "
    "(docs/notes/layout-dtypes.md)"
)

# Where the value oracle judges the canonical calls: every pool kind but FP4, whose bytes the
# fp4_bound oracle judges against the input (harness/compare/values.py collects these).
PLAIN_VALUES = ValueScope(
    names(MHA, SWA_MHA, MHA_HND, NPU_MHA, MHA_AITER5D, UNIFIED_MHA, MHA_CPU_FP8)
    + UNIFIED_SWA_KINDS
    + names(MLA, SWA_MLA, UNIFIED_MLA)
    + HYBRID_LINEAR_KINDS
    + HISPARSE_KINDS
    + PAGE_INTERLEAVE_KINDS
    + LAYER_SPLIT_KINDS,
    "MHA: k and v divided by the layer's scales (when a cast follows), cast to the "
    "pool dtype; MLA: the latent row nope ++ rope cast, no scales",
)
PLAIN_MLA_VALUES = ValueScope(
    names(
        MLA,
        SWA_MLA,
        NPU_MLA,
        UNIFIED_MLA,
        PAGE_INTERLEAVE_MLA,
        HYBRID_LINEAR_MLA,
        HYBRID_LINEAR_DSA,
    ),
    "nope ++ rope cast, no scales (NPU MLA: nope and rope in their own buffers)",
)


@register_backend(
    name="plain",
    order=0,
    device_type="any",
    pool_kinds=BASE_POOL_KINDS
    + UNIFIED_SWA_KINDS
    + PLAIN_LAYOUT_KINDS
    + HYBRID_LINEAR_KINDS
    + HISPARSE_KINDS
    + PAGE_INTERLEAVE_KINDS
    + LAYER_SPLIT_KINDS,
    modes=("extend",),
    focus=PLAIN_FOCUS,
    skips=(skips.FP4_NON_FINITE, skips.FULL_LOC_BY_DESIGN),
    kind_dtypes=PLAIN_KIND_DTYPES,
    kind_dtypes_reason=PLAIN_KIND_DTYPES_REASON,
    mla_input="latent",
    value_scope=PLAIN_VALUES,
    summary="each era's canonical set_kv_buffer call, no backend quirks",
)
def write_set_kv_buffer(req: WriteRequest, era: str, mode: str = "extend") -> None:
    if not req.save_kv_cache:
        return
    loc, keywords = loc_arguments(req, era)
    store_index_keys(req)  # a DSA layer's indexer keys, as its model stores them first
    if req.is_mla:
        # The MLA door takes no scales.
        req.pool.set_kv_buffer(req.layer, loc, req.mla_k, req.v, **keywords)
    else:
        req.pool.set_kv_buffer(
            req.layer, loc, req.k, req.v, req.layer.k_scale, req.layer.v_scale, **keywords
        )


@register_backend(
    name="plain_mla",
    order=1,
    device_type="any",
    pool_kinds=PLAIN_MLA_KINDS + PLAIN_MLA_LAYOUT_KINDS,
    modes=("extend",),
    focus=PLAIN_FOCUS,
    skips=(skips.FP4_NON_FINITE, skips.FULL_LOC_BY_DESIGN),
    kind_dtypes=PLAIN_KIND_DTYPES,
    kind_dtypes_reason=PLAIN_KIND_DTYPES_REASON,
    value_scope=PLAIN_MLA_VALUES,
    summary="each era's canonical set_mla_kv_buffer call (nope, rope)",
)
def write_set_mla_kv_buffer(req: WriteRequest, era: str, mode: str = "extend") -> None:
    if not req.is_mla:
        return write_set_kv_buffer(req, era, mode)
    if not req.save_kv_cache:
        return
    loc, keywords = loc_arguments(req, era)
    store_index_keys(req)
    req.pool.set_mla_kv_buffer(req.layer, loc, req.k, req.k_rope, **keywords)
