"""The builtin SUT: an era's front-end classes bound to one store engine.

The result looks like an SGLang module (same class names, same constructor keywords), so the
harness drives builtin pools and foreign pools through one code path.
"""

from __future__ import annotations

from types import SimpleNamespace

from pools.builtin.dsa_storage import DSAStorage
from pools.builtin.dsv4_indexer_storage import DeepSeekV4IndexerStorage
from pools.builtin.dsv4_storage import (
    DSV4HiSparseC4Storage,
    DSV4SingleStorage,
    DSV4UniformFP8Storage,
)
from pools.builtin.engines import make_engine
from pools.builtin.engines.base import StoreEngine
from pools.builtin.eras import era_named
from pools.builtin.hisparse_storage import HiSparseDSAStorage, HiSparseMHAStorage
from pools.builtin.hybrid_linear_storage import HybridLinearStorage
from pools.builtin.layer_split_storage import LayerSplitDSAStorage
from pools.builtin.layouts.kinds import LAYOUT_KINDS
from pools.builtin.minimax_m3_nvfp4_storage import (
    M3Nvfp4Storage,
    Nvfp4IndexStorage,
    Nvfp4MainStorage,
)
from pools.builtin.minimax_sparse_storage import KOnlyStorage, MiniMaxSparseStorage
from pools.builtin.page_interleave_storage import (
    PageInterleaveDSAStorage,
    PageInterleaveMHAStorage,
    PageInterleaveMLAStorage,
)
from pools.builtin.qsa_storage import QSAStorage
from pools.builtin.unified_draft_storage import UnifiedDraftSWAStorage
from pools.builtin.unified_swa_storage import UnifiedSWAStorage
from pools.kinds.pool_classes import BUILTIN_POOLS, registered_classes
from pools.kinds.registry import KINDS


def m3_nvfp4_pools(engine: StoreEngine) -> dict[str, type]:
    """MiniMaxM3Nvfp4KVPool and its two sub-pools, storing through `engine`."""
    main = type("MiniMaxM3Nvfp4MainKVPool", (Nvfp4MainStorage,), {"engine": engine})
    index = type("MiniMaxM3Nvfp4IndexKPool", (Nvfp4IndexStorage,), {"engine": engine})
    composite = type(
        "MiniMaxM3Nvfp4KVPool",
        (M3Nvfp4Storage,),
        {"main_pool_class": main, "index_pool_class": index},
    )
    return {c.__name__: c for c in (composite, main, index)}


def builtin_module(era_name: str, engine_name: str) -> SimpleNamespace:
    era = era_named(era_name)
    engine = make_engine(engine_name)
    source = era.module
    mha = type("MHATokenToKVPool", (source.MHATokenToKVPool,), {"engine": engine})
    mla = type("MLATokenToKVPool", (source.MLATokenToKVPool,), {"engine": engine})
    swa = type("SWAKVPool", (source.SWAKVPool,), {"default_sub_pool_class": mha})
    dsa = type("DSATokenToKVPool", (DSAStorage, mla), {})
    hybrid_linear = type(
        "HybridLinearKVPool",
        (HybridLinearStorage,),
        {"mha_pool_class": mha, "mla_pool_class": mla, "dsa_pool_class": dsa},
    )
    k_only = type("MHATokenToKOnlyPool", (KOnlyStorage,), {"engine": engine})
    minimax_sparse = type(
        "MiniMaxSparseKVPool",
        (MiniMaxSparseStorage,),
        {"mha_pool_class": mha, "k_only_pool_class": k_only},
    )
    names = {
        "HiSparseMHAMainPool": type("HiSparseMHAMainPool", (HiSparseMHAStorage, mha), {}),
        "HiSparseDSATokenToKVPool": type("HiSparseDSATokenToKVPool", (HiSparseDSAStorage, mla), {}),
        "PageInterleaveMHATokenToKVPool": type(
            "PageInterleaveMHATokenToKVPool", (PageInterleaveMHAStorage, mha), {}
        ),
        "PageInterleaveMLATokenToKVPool": type(
            "PageInterleaveMLATokenToKVPool", (PageInterleaveMLAStorage, mla), {}
        ),
        "PageInterleaveDSATokenToKVPool": type(
            "PageInterleaveDSATokenToKVPool", (PageInterleaveDSAStorage, mla), {}
        ),
        "LayerSplitDSATokenToKVPool": type(
            "LayerSplitDSATokenToKVPool", (LayerSplitDSAStorage, mla), {}
        ),
        "MiniMaxSparseKVPool": minimax_sparse,
        "MHATokenToKOnlyPool": k_only,
        "DeepSeekV4IndexerPool": DeepSeekV4IndexerStorage,
        "DeepSeekV4SingleKVPool": type("DeepSeekV4SingleKVPool", (DSV4SingleStorage,), {}),
        "DeepSeekV4UniformFP8KVPool": type(
            "DeepSeekV4UniformFP8KVPool", (DSV4UniformFP8Storage,), {}
        ),
        "HiSparseC4DevicePool": type("HiSparseC4DevicePool", (DSV4HiSparseC4Storage,), {}),
        **m3_nvfp4_pools(engine),
        "MHATokenToKVPool": mha,
        "MLATokenToKVPool": mla,
        "SWAKVPool": swa,
        "DSATokenToKVPool": dsa,
        "HybridLinearKVPool": hybrid_linear,
        "QSATokenToKVPool": type(
            "QSATokenToKVPool", (QSAStorage,), {"mha_pool_class": mha, "mla_pool_class": mla}
        ),
        "name": f"builtin:{era_name}:{engine_name}",
        "version": "builtin",
        # Its pools hold no state a run leaves behind that the harness cannot check, so one is
        # built per geometry and reused (harness/run/pool_cache.py REUSE_POOLS).
        "reuse_pools": True,
    }
    for kind in LAYOUT_KINDS.values():
        # The storage first, for its buffers and bytes; the era's set_kv_buffer parses the loc.
        era_class = getattr(source, kind.era_class)
        names[kind.class_name] = type(
            kind.class_name, (kind.storage, era_class), {"engine": engine}
        )
    for optional in ("KVWriteLoc", "unwrap_write_loc"):
        if hasattr(source, optional):
            names[optional] = getattr(source, optional)
    if hasattr(getattr(source, "KVWriteLoc", None), "physical"):  # its sub-pools need the mark
        routing = {
            "sub_pool_class": names["UnifiedMHATokenToKVPool"],
            "write_loc_class": source.KVWriteLoc,
            "unwrap_write_loc": staticmethod(source.unwrap_write_loc),
        }
        for name, storage in (
            ("UnifiedSWAKVPool", UnifiedSWAStorage),
            ("UnifiedDraftSWAKVPool", UnifiedDraftSWAStorage),
        ):
            names[name] = type(name, (storage,), routing)
    names.update(registered_classes(BUILTIN_POOLS, names, KINDS))
    return SimpleNamespace(**names)
