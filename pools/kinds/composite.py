"""Pools built of other pools or of fixed-format rows: the unified SWA pools (a target's and a
fused draft's), SWA over DSA, DeepSeek V4's indexer and main-KV pools, MiniMax M3's NVFP4 pool.
Each is the current release's (docs/pools.md says from which release each class exists)."""

from pools.kinds import layer_buffers
from pools.kinds.geometry_rules import unified_kv_rows
from pools.kinds.spec import PoolKind

CURRENT = ("current",)
# A V4 latent row is 448 NoPE + 64 RoPE: 584 bytes a slot in the V4 layout (73 MiB at 2^17
# slots), 512 in uniform FP8 (64 MiB). Measured on the three V4 kinds' default --sut sglang run:
# peak memory 0.70 to 0.92 GB, a few seconds.
V4_TRAITS = dict(
    eras=CURRENT, latent=True, dsv4=True, reach_floor_bytes=74 * 2**20, buffers=layer_buffers.dsv4
)

SWA_UNIFIED = PoolKind(
    "swa_unified",
    "UnifiedSWAKVPool",
    "composite",
    23,
    eras=CURRENT,
    swa=True,
    buffers=layer_buffers.unified_swa,
    unified_swa=True,
    full_loc_by_design=True,
    word_rows=True,
    geometry_rules=(unified_kv_rows,),
)

SWA_UNIFIED_DRAFT = PoolKind(
    "swa_unified_draft",
    "UnifiedDraftSWAKVPool",
    "composite",
    24,
    eras=CURRENT,
    swa=True,
    buffers=layer_buffers.unified_swa,
    unified_swa=True,
    unified_draft=True,
    word_rows=True,
    geometry_rules=(unified_kv_rows,),
)

SWA_DSA = PoolKind(
    "swa_dsa",
    "SWAKVPool",
    "composite",
    26,
    eras=CURRENT,
    swa=True,
    latent=True,
    dsa_mla=True,
    dsa_index=True,
    doors=("set_mla_kv_buffer", "set_index_k_scale_buffer"),  # the dots3 model's writes
)

DSV4_INDEXER = PoolKind(
    "dsv4_indexer",
    "DeepSeekV4IndexerPool",
    "composite",
    27,
    eras=CURRENT,
    latent=True,
    keeps_kv=False,
    dsa_index=True,
    doors=("set_index_k_scale_buffer",),  # indexer keys alone: no K/V door
)

DSV4 = PoolKind(
    "dsv4",
    "DeepSeekV4SingleKVPool",
    "composite",
    28,
    # The call site quantises (backends/dsv4.py quantise_pack) and hands judge and candidate
    # the same pack; tests/test_dsv4.py pins that quantiser against the release's reference.
    values_judged_elsewhere="the V4 pack is quantised by the call site, not the pool: the "
    "judge places its bytes",
    doors=("set_key_buffer",),  # backends/dsv4.py: the V4 pack's store
    **V4_TRAITS,
)

DSV4_UNIFORM_FP8 = PoolKind(
    "dsv4_uniform_fp8",
    "DeepSeekV4UniformFP8KVPool",
    "composite",
    29,
    doors=("set_key_buffer_fused",),  # the trtllm compressor's e4m3 rows
    **{**V4_TRAITS, "reach_floor_bytes": 65 * 2**20},
)

DSV4_HISPARSE_C4 = PoolKind(
    "dsv4_hisparse_c4",
    "HiSparseC4DevicePool",
    "composite",
    30,
    hisparse=True,
    values_judged_elsewhere="as dsv4: the call site's pack, placed by the judge at the device slot",
    doors=("set_key_buffer",),  # the V4 pack's store at the device slot
    **V4_TRAITS,
)

MINIMAX_M3_NVFP4 = PoolKind(
    "minimax_m3_nvfp4",
    "MiniMaxM3Nvfp4KVPool",
    "composite",
    31,
    eras=CURRENT,
    nvfp4_page_rows=True,
    buffers=layer_buffers.nvfp4_page_rows,
    v_as_k=True,
    # Its heads are 128 wide: one layer of one head keeps 216 bytes a slot (K, V and index K,
    # payload and scales), 27 MiB at 2^17 + 2 pages.
    reach_floor_bytes=28 * 2**20,
    # A retracted request's restore: the sub-pools' byte copies of already-quantised rows.
    doors=(
        ("MiniMaxM3Nvfp4MainKVPool", "set_quantized_kv_buffer"),
        ("MiniMaxM3Nvfp4IndexKPool", "set_quantized_k_buffer"),
    ),
)

RECORDS = (
    SWA_UNIFIED,
    SWA_UNIFIED_DRAFT,
    SWA_DSA,
    DSV4_INDEXER,
    DSV4,
    DSV4_UNIFORM_FP8,
    DSV4_HISPARSE_C4,
    MINIMAX_M3_NVFP4,
)
