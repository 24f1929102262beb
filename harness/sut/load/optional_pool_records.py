"""The pool classes the SGLang loader offers beyond the SUT protocol's three, as records: the
module each comes from, what it is built from, the tiny pool that must construct here and the
design marks its kind models. harness/sut/load/optional_pools.py offers them."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import torch

from backends.sglang_names import HND_SWITCH, PHYSICAL_CHECK_NAMES
from harness.sut.load.release_constructors import (
    aiter5d_mha,
    cpu_fp8_mha,
    hnd_mha,
    layer_split_dsa,
    page_interleave,
    unified_draft_swa,
    unified_mha,
    unified_mla,
    unified_swa,
)

MEMORY_POOL = "sglang.srt.mem_cache.memory_pool"
UNIFIED = "sglang.srt.mem_cache.unified_memory_pool"
HISPARSE = "sglang.srt.mem_cache.hisparse_memory_pool"
PAGE_INTERLEAVE = "sglang.srt.mem_cache.page_interleave_pool"
QSA = "sglang.srt.mem_cache.qsa_kv_pool"
UNIFIED_DRAFT = "sglang.srt.mem_cache.unified_draft_pool"
DEEPSEEK_V4 = "sglang.srt.mem_cache.deepseek_v4_memory_pool"
M3_NVFP4 = "sglang.srt.mem_cache.minimax_m3_nvfp4_pool"


_UNIFIED_SWA_TRIAL = dict(
    size=4, size_swa=4, page_size=1, dtype=torch.bfloat16, head_num=1, head_dim=16,
    swa_attention_layer_ids=[1], full_attention_layer_ids=[0], device="cpu", swa_slot_base=5,
)  # fmt: skip
# A tiny pool of each shape, built once at load time: a class that does not construct on this
# machine (0.5.12's FP4 pool imports a quantiser its release lacks) is not offered.
_MHA_TRIAL = dict(
    size=4, page_size=1, head_num=1, head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False,
)  # fmt: skip
# DSATokenToKVPool's: 64-token pages, 128-wide indexer keys, the latent row's width.
_DSA_TRIAL = dict(
    size=128, page_size=64, kv_lora_rank=16, qk_rope_head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False, index_head_dim=128, kv_cache_dim=32,
)  # fmt: skip
_MLA_TRIAL = dict(
    size=4, page_size=1, kv_lora_rank=16, qk_rope_head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False,
)  # fmt: skip
# DeepSeekV4SingleKVPool's: the V4 latent row's widths (it asserts 584 bytes a token), e4m3.
_DSV4_TRIAL = dict(
    size=128, page_size=64, dtype=torch.float8_e4m3fn, qk_nope_head_dim=448, qk_rope_head_dim=64,
    layer_num=1, device="cpu", enable_memory_saver=False,
)  # fmt: skip
_HYBRID_TRIAL = dict(
    size=4, page_size=1, head_num=1, head_dim=16, full_attention_layer_ids=[1], device="cpu",
    mamba_pool=None,
)  # fmt: skip

# A unified pool's own word that it refuses an unmarked loc (backends/sglang_names.py).
REFUSES_UNMARKED = PHYSICAL_CHECK_NAMES[0]


@dataclass(frozen=True)
class OptionalPool:
    name: str  # the class name the pool kind asks the SUT for
    module: str
    parts: tuple[str, ...]  # what the module must define
    build: Callable[[ModuleType], Callable[..., Any]]
    trial: dict  # the keywords of a tiny pool that must construct here
    # Attributes the release's class (or, as "Class.attribute", another class of its module)
    # must have for the kind's model to be its semantics: the unified kinds model pools that
    # refuse an unmarked loc (0.5.22 on; earlier unified pools took no physical mark and are
    # another design).
    marks: tuple[str, ...] = ()
    # The width of the row a refusal trial writes at layer 0 (0: none). Where the release has a
    # write-loc plan, the design is decided by running the tiny pool instead of by `marks`: it
    # must refuse KVWriteLoc(loc) and write the loc its plan marked (refuses_unmarked).
    refusal_row: int = 0
    # (method, parameter) the class's doors must take for the kind's call to be the release's:
    # 0.5.15 and 0.5.16's MiniMax fused door takes no scales, and their backend passes none.
    parameters: tuple[tuple[str, str], ...] = ()
    # The layer a one-token bare-loc set_kv_buffer writes on the tiny pool (None: no write), for
    # a class whose door imports what it needs only when it first writes (0.5.12's FP4 pool).
    trial_write_layer: int | None = None
    # Trial keywords passed only where the class takes them (an option later releases added,
    # whose default reads the runtime's published config, which a bare loader has not).
    trial_if_taken: tuple[tuple[str, Any], ...] = ()
    # Words the module's source must hold for the offer (offered_classes reads the source; a
    # loaded release's built constructor checks the same thing when the trial pool is built).
    source_words: tuple[str, ...] = ()
    # Whether a release's source can say the loader offers it: not where it builds only on a
    # device the source does not name (the 5-D layout is ROCm's, decided when it is imported).
    offered_from_source: bool = True


OPTIONAL_POOLS: tuple[OptionalPool, ...] = (
    OptionalPool(
        "HybridLinearKVPool",
        MEMORY_POOL,
        ("HybridLinearKVPool",),
        lambda memory_pool: memory_pool.HybridLinearKVPool,
        dict(_HYBRID_TRIAL, dtype=torch.bfloat16),
        trial_write_layer=1,
    ),
    OptionalPool(  # the full side of SWAKVPool over DSA (swa_dsa)
        "DSATokenToKVPool",
        MEMORY_POOL,
        ("DSATokenToKVPool",),
        lambda memory_pool: memory_pool.DSATokenToKVPool,
        dict(_DSA_TRIAL, dtype=torch.bfloat16),
    ),
    OptionalPool(
        "QSATokenToKVPool",
        QSA,
        ("QSATokenToKVPool",),
        lambda qsa_kv_pool: qsa_kv_pool.QSATokenToKVPool,
        dict(
            _HYBRID_TRIAL,
            page_size=4,
            dtype=torch.bfloat16,
            qsa_index_kv_heads=1,
            qsa_index_head_dim=16,
            qsa_compress_ratio=4,
            qsa_token_topk=4,
            num_request_slots=2,
        ),  # fmt: skip
        trial_write_layer=1,
    ),
    OptionalPool(  # MHATokenToKVPool under SGLANG_USE_HND_KVCACHE (0.5.23 on)
        "MHATokenToKVPoolHND",
        MEMORY_POOL,
        ("MHATokenToKVPool",),
        hnd_mha,
        dict(_MHA_TRIAL, dtype=torch.bfloat16),
        trial_write_layer=0,
        source_words=(HND_SWITCH,),
    ),
    OptionalPool(  # MHATokenToKVPool with a CPU server's fp8_e4m3 quant method (0.5.23 on)
        "MHATokenToKVPoolCPUFP8",
        MEMORY_POOL,
        ("MHATokenToKVPool",),
        cpu_fp8_mha,
        dict(_MHA_TRIAL, dtype=torch.float8_e4m3fn),
        trial_write_layer=0,
        source_words=("quant_method",),
    ),
    OptionalPool(  # MHATokenToKVPool under its ROCm AITER 5-D layout switches
        "MHATokenToKVPoolAiter5D",
        MEMORY_POOL,
        ("MHATokenToKVPool",),
        aiter5d_mha,
        dict(_MHA_TRIAL, dtype=torch.bfloat16, size=16, page_size=8),  # whole 16-byte words
        trial_write_layer=0,
        offered_from_source=False,
    ),
    OptionalPool(
        "MHATokenToKVPoolFP4",
        MEMORY_POOL,
        ("MHATokenToKVPoolFP4",),
        lambda memory_pool: memory_pool.MHATokenToKVPoolFP4,
        dict(_MHA_TRIAL, dtype=torch.float4_e2m1fn_x2),
        trial_write_layer=0,
    ),
    # Its store is a Triton kernel: it writes here under the interpreter (TRITON_INTERPRET=1,
    # which pools/builtin/engines/triton_mode.py sets on a machine without a GPU).
    OptionalPool(
        "MLATokenToKVPoolFP4",
        MEMORY_POOL,
        ("MLATokenToKVPoolFP4",),
        lambda memory_pool: memory_pool.MLATokenToKVPoolFP4,
        dict(_MLA_TRIAL, dtype=torch.float4_e2m1fn_x2, qk_rope_head_dim=0),
        trial_write_layer=0,
    ),
    OptionalPool(
        "MiniMaxSparseKVPool",
        MEMORY_POOL,
        ("MiniMaxSparseKVPool", "MHATokenToKOnlyPool"),
        lambda memory_pool: memory_pool.MiniMaxSparseKVPool,
        dict(
            size=4,
            page_size=1,
            dtype=torch.bfloat16,
            head_num=1,
            head_dim=16,
            idx_head_dim=16,
            dense_layer_ids=[0],
            sparse_layer_ids=[1, 2],
            disable_value_sparse_layer_ids=[2],
            device="cpu",
            start_layer=0,
            end_layer=3,
        ),  # fmt: skip
        parameters=(("set_fused_kv_index_buffer", "idx_v_scale"),),
        trial_write_layer=0,
    ),
    # 0.5.23 on. Its set_kv_buffer quantises (SM90+): construction only; the kind's cells call
    # the sub-pools' byte-copy doors (backends/retraction_restore.py).
    OptionalPool(
        "MiniMaxM3Nvfp4KVPool",
        M3_NVFP4,
        ("MiniMaxM3Nvfp4KVPool", "MiniMaxM3Nvfp4MainKVPool", "MiniMaxM3Nvfp4IndexKPool"),
        lambda m3_nvfp4_pool: m3_nvfp4_pool.MiniMaxM3Nvfp4KVPool,
        dict(
            size=128,
            page_size=128,
            dtype=torch.bfloat16,
            head_num=1,
            head_dim=128,
            idx_head_dim=128,
            dense_layer_ids=[],
            sparse_layer_ids=[0],
            disable_value_sparse_layer_ids=[0],
            device="cpu",
            start_layer=0,
            end_layer=1,
        ),  # fmt: skip
    ),
    # Their doors translate through a mapping the trial does not register: construction only.
    OptionalPool(
        "HiSparseMHAMainPool",
        HISPARSE,
        ("HiSparseMHAMainPool",),
        lambda hisparse: hisparse.HiSparseMHAMainPool,
        dict(_MHA_TRIAL, dtype=torch.bfloat16),
    ),
    OptionalPool(
        "HiSparseDSATokenToKVPool",
        HISPARSE,
        ("HiSparseDSATokenToKVPool",),
        lambda hisparse: hisparse.HiSparseDSATokenToKVPool,
        dict(_DSA_TRIAL, size=64, dtype=torch.bfloat16),
    ),
    OptionalPool(
        "PageInterleaveMHATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveMHATokenToKVPool",),
        page_interleave("PageInterleaveMHATokenToKVPool"),
        dict(_MHA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
        trial_write_layer=0,
    ),
    OptionalPool(
        "PageInterleaveMLATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveMLATokenToKVPool",),
        page_interleave("PageInterleaveMLATokenToKVPool"),
        dict(_MLA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
    ),
    OptionalPool(
        "PageInterleaveDSATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveDSATokenToKVPool",),
        page_interleave("PageInterleaveDSATokenToKVPool"),
        dict(_DSA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
    ),
    OptionalPool(
        "LayerSplitDSATokenToKVPool",
        "sglang.srt.mem_cache.dsa_cache_layer_split",
        ("LayerSplitDSATokenToKVPool",),
        layer_split_dsa,
        dict(
            _DSA_TRIAL, dtype=torch.bfloat16, layer_num=2, layer_shard_rank=0, layer_shard_size=2
        ),  # fmt: skip
    ),
    # Its K/V doors raise by design: the trial only constructs it (FP8 keys, where the class
    # offers FP4 at all).
    OptionalPool(
        "DeepSeekV4IndexerPool",
        DEEPSEEK_V4,
        ("DeepSeekV4IndexerPool",),
        lambda deepseek_v4: deepseek_v4.DeepSeekV4IndexerPool,
        dict(
            size=128,
            page_size=64,
            dtype=torch.float8_e4m3fn,
            index_head_dim=128,
            layer_num=1,
            device="cpu",
            enable_memory_saver=False,
        ),  # fmt: skip
        trial_if_taken=(("use_fp4_indexer", False),),
    ),
    # Their doors take no KVWriteLoc and no layer object (a layer id and a pack or (n, 512)
    # rows): construction only; the single pool's store is a Triton kernel, interpreted here.
    OptionalPool(
        "DeepSeekV4SingleKVPool",
        DEEPSEEK_V4,
        ("DeepSeekV4SingleKVPool",),
        lambda dsv4: dsv4.DeepSeekV4SingleKVPool,
        _DSV4_TRIAL,
    ),
    OptionalPool(
        "DeepSeekV4UniformFP8KVPool",
        DEEPSEEK_V4,
        ("DeepSeekV4UniformFP8KVPool",),
        lambda dsv4: dsv4.DeepSeekV4UniformFP8KVPool,
        _DSV4_TRIAL,
    ),
    OptionalPool(
        "HiSparseC4DevicePool",
        DEEPSEEK_V4,
        ("HiSparseC4DevicePool",),
        lambda dsv4: dsv4.HiSparseC4DevicePool,
        _DSV4_TRIAL,
    ),
    OptionalPool(
        "UnifiedMHATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MHASubPoolSpec", "UnifiedMHATokenToKVPool"),
        unified_mha,
        dict(_MHA_TRIAL, dtype=torch.bfloat16),
        marks=(REFUSES_UNMARKED,),
        refusal_row=16,
    ),
    OptionalPool(
        "UnifiedMLATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MLASubPoolSpec", "MHASubPoolSpec", "UnifiedMLATokenToKVPool"),
        unified_mla,
        dict(_MLA_TRIAL, dtype=torch.bfloat16),
        marks=(REFUSES_UNMARKED,),
        refusal_row=32,
    ),
    OptionalPool(
        "UnifiedSWAKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MHASubPoolSpec", "UnifiedMHATokenToKVPool", "UnifiedSWAKVPool"),
        unified_swa,
        _UNIFIED_SWA_TRIAL,
        # Its sub-pools are the unified MHA pool, which must refuse an unmarked loc.
        marks=(f"UnifiedMHATokenToKVPool.{REFUSES_UNMARKED}",),
        refusal_row=16,
    ),
    OptionalPool(
        "UnifiedDraftSWAKVPool",
        UNIFIED_DRAFT,
        ("UnifiedDraftSWAKVPool",),
        unified_draft_swa,
        dict(_UNIFIED_SWA_TRIAL, host_layer_num=1, runner=1, runner_num=2),
        marks=(REFUSES_UNMARKED,),
        refusal_row=16,
    ),
)
