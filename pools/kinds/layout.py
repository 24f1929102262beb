"""Kinds whose storage is not plain token-major rows: packed FP4, page-major (HND), the NPU's
one-tensor and split-latent layouts, aiter's 5-D cache, and the unified pools' byte entries; each
record names its buffers (the pool attribute, and how a layer's buffer reads as slot rows). HND
and aiter's 5-D are SGLang's MHATokenToKVPool under an environment switch, so the builtin names
their classes apart. The unified pools' locs carry the physical mark, which only the current era
has."""

from pools.kinds.geometry_rules import (
    aiter_5d_widths,
    unified_kv_rows,
    unified_latent_row,
    whole_pages,
)
from pools.kinds.layer_buffers import layout
from pools.kinds.slot_rows import (
    aiter_key_rows,
    aiter_value_rows,
    kept,
    page_major_rows,
    paged_token_rows,
)
from pools.kinds.spec import PoolKind

CURRENT = ("current",)

FP4_TRAITS = dict(
    fp4=True,
    values_judged_elsewhere="FP4 bytes are judged against the input by the fp4_bound oracle",
)

MHA_FP4 = PoolKind(
    "mha_fp4",
    "MHATokenToKVPoolFP4",
    "layout",
    5,
    v_as_k=True,
    buffers=layout(
        ("k", "k_buffer", kept),
        ("v", "v_buffer", kept),
        ("k_scale", "k_scale_buffer", kept),
        ("v_scale", "v_scale_buffer", kept),
    ),
    **FP4_TRAITS,
)

MLA_FP4 = PoolKind(
    "mla_fp4",
    "MLATokenToKVPoolFP4",
    "layout",
    6,
    latent=True,
    rope_required=True,  # 0.5.23's FP4 MLA store reads k_rope's shape
    buffers=layout(("kv", "kv_buffer", kept), ("kv_scale", "kv_scale_buffer", kept)),
    **FP4_TRAITS,
)

MHA_HND = PoolKind(
    "mha_hnd",
    "MHATokenToKVPoolHND",
    "layout",
    7,
    page_major=True,
    geometry_rules=(whole_pages,),
    buffers=layout(("k", "k_buffer", page_major_rows), ("v", "v_buffer", page_major_rows)),
    pipeline_rank=True,  # its HND branch indexes k_buffer and v_buffer at layer_id - start_layer
)

NPU_MHA = PoolKind(
    "npu_mha",
    "NPUMHATokenToKVPool",
    "layout",
    8,
    geometry_rules=(whole_pages,),
    buffers=layout(("k", "k_buffer", paged_token_rows), ("v", "v_buffer", paged_token_rows)),
)

NPU_MLA = PoolKind(
    "npu_mla",
    "NPUMLATokenToKVPool",
    "layout",
    9,
    latent=True,
    rope_required=True,  # it keeps rope in a buffer of its own
    geometry_rules=(whole_pages,),
    buffers=layout(("nope", "k_buffer", paged_token_rows), ("rope", "v_buffer", paged_token_rows)),
)

MHA_AITER5D = PoolKind(
    "mha_aiter5d",
    "MHATokenToKVPoolAiter5D",
    "layout",
    10,
    word_rows=True,
    page_multiple=16,
    geometry_rules=(whole_pages, aiter_5d_widths),
    buffers=layout(("k", "k_buffer", aiter_key_rows), ("v", "v_buffer", aiter_value_rows)),
)

UNIFIED_MHA = PoolKind(
    "unified_mha",
    "UnifiedMHATokenToKVPool",
    "layout",
    11,
    eras=CURRENT,
    word_rows=True,
    geometry_rules=(unified_kv_rows,),
    buffers=layout(("k", "k_buffer", kept), ("v", "v_buffer", kept)),
)

UNIFIED_MLA = PoolKind(
    "unified_mla",
    "UnifiedMLATokenToKVPool",
    "layout",
    12,
    eras=CURRENT,
    latent=True,
    word_rows=True,
    rope_required=True,  # its spec asserts rope > 0
    geometry_rules=(unified_latent_row,),
    buffers=layout(
        ("kv", "kv_buffer", kept),
    ),
)

# A CPU server's fp8_e4m3 cache (0.5.23: kv_cache_configurator builds MHATokenToKVPool with
# CPUFP8KVCacheMethod, for intel_amx): the door's quantized path divides a copy of k and v by the
# scales (1.0 where None), never the caller's, and stores fp8 e4m3 rows; V is as wide as K.
MHA_CPU_FP8 = PoolKind(
    "mha_cpu_fp8",
    "MHATokenToKVPoolCPUFP8",
    "layout",
    32,
    eras=CURRENT,
    v_as_k=True,
    pipeline_rank=True,  # its quantized path indexes k_buffer at layer_id - start_layer
    buffers=layout(("k", "k_buffer", kept), ("v", "v_buffer", kept)),
)

RECORDS = (
    MHA_FP4,
    MLA_FP4,
    MHA_HND,
    NPU_MHA,
    NPU_MLA,
    MHA_AITER5D,
    UNIFIED_MHA,
    UNIFIED_MLA,
    MHA_CPU_FP8,
)
