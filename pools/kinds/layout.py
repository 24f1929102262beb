"""Kinds whose storage is not plain token-major rows: packed FP4, page-major (HND), the NPU's
one-tensor and split-latent layouts, aiter's 5-D cache, and the unified pools' byte entries
(their buffers: pools/layouts/kinds.py). HND and aiter's 5-D are SGLang's MHATokenToKVPool under
an environment switch, so the builtin names their classes apart. The unified pools' locs carry
the physical mark, which only the current era has."""

from pools.kinds.geometry_rules import (
    aiter_5d_widths,
    unified_kv_rows,
    unified_latent_row,
    whole_pages,
)
from pools.kinds.spec import PoolKind

CURRENT = ("current",)

FP4 = dict(
    fp4=True,
    values_judged_elsewhere="FP4 bytes are judged against the input by the fp4_bound oracle",
)

RECORDS = (
    PoolKind("mha_fp4", "MHATokenToKVPoolFP4", "layout", 5, **FP4),
    PoolKind("mla_fp4", "MLATokenToKVPoolFP4", "layout", 6, latent=True, **FP4),
    PoolKind("mha_hnd", "MHATokenToKVPoolHND", "layout", 7, geometry_rules=(whole_pages,)),
    PoolKind("npu_mha", "NPUMHATokenToKVPool", "layout", 8, geometry_rules=(whole_pages,)),
    PoolKind(
        "npu_mla", "NPUMLATokenToKVPool", "layout", 9, latent=True, geometry_rules=(whole_pages,)
    ),
    PoolKind(
        "mha_aiter5d",
        "MHATokenToKVPoolAiter5D",
        "layout",
        10,
        geometry_rules=(whole_pages, aiter_5d_widths),
    ),
    PoolKind(
        "unified_mha",
        "UnifiedMHATokenToKVPool",
        "layout",
        11,
        eras=CURRENT,
        geometry_rules=(unified_kv_rows,),
    ),
    PoolKind(
        "unified_mla",
        "UnifiedMLATokenToKVPool",
        "layout",
        12,
        eras=CURRENT,
        latent=True,
        geometry_rules=(unified_latent_row,),
    ),
)
