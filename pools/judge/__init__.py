"""The judge: an independent implementation of SGLang's KV pool API, per era, on CPU.

It shares no pool code with the builtin pools it judges (pools/builtin, forbidden to it whole by
an import-linter contract in pyproject.toml, so a new storage there cannot slip past): its own
division, casts (NumPy bit arithmetic), FP4 quantiser, per-token write loop, layouts, era doors,
SWA routing and translation. A bug shared by the baseline and a candidate is one no
comparison can see; docs/judge.md says how each rule was checked.

What it does share, openly, is SGLang's API surface in pools.write_loc: the per-era KVWriteLoc
dataclasses (for_batch, for_layer, the __post_init__ cut) and unwrap_write_loc, which the builtin
eras and the mutant bases import too. A slip there would be invisible to the differential, so
tests/test_write_loc_sglang.py compares that module with the installed SGLang's own on the same
inputs instead. (And pools.dtypes, the dtype-name table.)
"""

from __future__ import annotations

from types import SimpleNamespace

from pools.judge.dsa_index import JudgeDSAPool
from pools.judge.dsv4 import JudgeDSV4HiSparseC4Pool, JudgeDSV4Pool, JudgeDSV4UniformFP8Pool
from pools.judge.dsv4_indexer import JudgeDeepSeekV4IndexerPool
from pools.judge.eras import ERA_FRONTS
from pools.judge.fp4_pools import MHAFP4JudgePool, MLAFP4JudgePool
from pools.judge.hisparse import HiSparseDSAJudgePool, HiSparseMHAJudgePool
from pools.judge.hybrid import JudgeHybridPool
from pools.judge.hybrid_linear import JudgeHybridLinearPool
from pools.judge.layer_split import LayerSplitDSAJudgePool
from pools.judge.layouts import (
    Aiter5DJudgePool,
    HNDJudgePool,
    NPUMHAJudgePool,
    NPUMLAJudgePool,
)
from pools.judge.minimax_m3_nvfp4 import (
    JudgeM3Nvfp4Pool,
    JudgeNvfp4IndexPool,
    JudgeNvfp4MainPool,
)
from pools.judge.minimax_sparse import JudgeKOnlyPool, JudgeMiniMaxSparsePool
from pools.judge.page_interleave import (
    PageInterleaveDSAJudgePool,
    PageInterleaveMHAJudgePool,
    PageInterleaveMLAJudgePool,
)
from pools.judge.qsa import JudgeQSAPool
from pools.judge.token_major import MHAJudgePool, MLAJudgePool
from pools.judge.unified import UnifiedMHAJudgePool, UnifiedMLAJudgePool
from pools.judge.unified_draft import JudgeUnifiedDraftSWAPool
from pools.judge.unified_swa import JudgeUnifiedSWAPool
from pools.kinds.pool_classes import JUDGE_POOLS, registered_classes
from pools.kinds.registry import KINDS

# SGLang's class name for each pool the judge offers beyond the token-major three (the names
# pools/builtin/layouts/kinds.py declares; tests/test_judge.py keeps the two in step): (storage, the
# era class whose doors it takes).
LAYOUT_CLASSES: dict[str, tuple[type, str]] = {
    "MHATokenToKVPoolFP4": (MHAFP4JudgePool, "MHATokenToKVPool"),
    "MLATokenToKVPoolFP4": (MLAFP4JudgePool, "MLATokenToKVPool"),
    "MHATokenToKVPoolHND": (HNDJudgePool, "MHATokenToKVPool"),
    "NPUMHATokenToKVPool": (NPUMHAJudgePool, "MHATokenToKVPool"),
    "NPUMLATokenToKVPool": (NPUMLAJudgePool, "MLATokenToKVPool"),
    "MHATokenToKVPoolAiter5D": (Aiter5DJudgePool, "MHATokenToKVPool"),
    "UnifiedMHATokenToKVPool": (UnifiedMHAJudgePool, "MHATokenToKVPool"),
    "UnifiedMLATokenToKVPool": (UnifiedMLAJudgePool, "MLATokenToKVPool"),
}


def judge_module(era: str) -> SimpleNamespace:
    """SGLang's pool names for `era` (legacy, kwarg, bundled, current), implemented by the judge."""
    try:
        front = ERA_FRONTS[era]
    except KeyError:
        raise ValueError(f"unknown era {era!r}; choose from {', '.join(ERA_FRONTS)}") from None
    # The era's unwrap_write_loc, as the doors of the bundled and current eras call it.
    marks = {} if front.unwrap is None else {"unwrap": staticmethod(front.unwrap)}
    doors = {"MHATokenToKVPool": front.mha, "MLATokenToKVPool": front.mla}
    # The storage first, so a layout's own doors (the NPU MLA set_kv_buffer) win over the era's.
    mha = type("MHATokenToKVPool", (MHAJudgePool, front.mha), dict(marks))
    mla = type(
        "MLATokenToKVPool",
        (MLAJudgePool, front.mla),
        {**marks, "mla_rows_checked": front.mla_rows_checked},
    )
    swa = type("SWAKVPool", (JudgeHybridPool, front.swa), {**marks, "default_sub_pool_class": mha})
    dsa = type("DSATokenToKVPool", (JudgeDSAPool, mla), {})
    hybrid_linear = type(
        "HybridLinearKVPool",
        (JudgeHybridLinearPool,),
        {"mha_pool_class": mha, "mla_pool_class": mla, "dsa_pool_class": dsa},
    )
    minimax_sparse = type("MiniMaxSparseKVPool", (JudgeMiniMaxSparsePool,), {"mha_pool_class": mha})
    names = {
        "HiSparseMHAMainPool": type("HiSparseMHAMainPool", (HiSparseMHAJudgePool, mha), {}),
        "HiSparseDSATokenToKVPool": type(
            "HiSparseDSATokenToKVPool", (HiSparseDSAJudgePool, mla), {}
        ),
        "PageInterleaveMHATokenToKVPool": type(
            "PageInterleaveMHATokenToKVPool", (PageInterleaveMHAJudgePool, mha), {}
        ),
        "PageInterleaveMLATokenToKVPool": type(
            "PageInterleaveMLATokenToKVPool", (PageInterleaveMLAJudgePool, mla), {}
        ),
        "PageInterleaveDSATokenToKVPool": type(
            "PageInterleaveDSATokenToKVPool", (PageInterleaveDSAJudgePool, mla), {}
        ),
        "LayerSplitDSATokenToKVPool": type(
            "LayerSplitDSATokenToKVPool", (LayerSplitDSAJudgePool, mla), {}
        ),
        "MiniMaxSparseKVPool": minimax_sparse,
        "MHATokenToKOnlyPool": JudgeKOnlyPool,
        "DeepSeekV4IndexerPool": JudgeDeepSeekV4IndexerPool,
        "DeepSeekV4SingleKVPool": JudgeDSV4Pool,
        "DeepSeekV4UniformFP8KVPool": JudgeDSV4UniformFP8Pool,
        "HiSparseC4DevicePool": JudgeDSV4HiSparseC4Pool,
        "MiniMaxM3Nvfp4KVPool": JudgeM3Nvfp4Pool,
        "MiniMaxM3Nvfp4MainKVPool": JudgeNvfp4MainPool,
        "MiniMaxM3Nvfp4IndexKPool": JudgeNvfp4IndexPool,
        "MHATokenToKVPool": mha,
        "MLATokenToKVPool": mla,
        "SWAKVPool": swa,
        "DSATokenToKVPool": dsa,
        "HybridLinearKVPool": hybrid_linear,
        "QSATokenToKVPool": type(
            "QSATokenToKVPool", (JudgeQSAPool,), {"mha_pool_class": mha, "mla_pool_class": mla}
        ),
        "name": f"judge:{era}",
        "version": "judge",
        "reuse_pools": True,  # one pool per geometry, reused (harness/run/pool_cache.py)
    }
    for class_name, (storage, door) in LAYOUT_CLASSES.items():
        names[class_name] = type(class_name, (storage, doors[door]), dict(marks))
    if hasattr(front.write_loc, "physical"):  # its unified sub-pools need the physical mark
        sub_pool = {"unified_mha_class": names["UnifiedMHATokenToKVPool"]}
        for name, judge in (
            ("UnifiedSWAKVPool", JudgeUnifiedSWAPool),
            ("UnifiedDraftSWAKVPool", JudgeUnifiedDraftSWAPool),
        ):
            names[name] = type(name, (judge,), sub_pool)
    if front.write_loc is not None:
        names["KVWriteLoc"] = type("KVWriteLoc", (front.write_loc,), {})
        names["unwrap_write_loc"] = front.unwrap
    names.update(registered_classes(JUDGE_POOLS, names, KINDS))
    return SimpleNamespace(**names)
