"""Pools that hold more than one kind of layer or route a write elsewhere than its loc: the
hybrid linear pools (and QSA's, one of them), MiniMax's sparse pool, the HiSparse device pools,
page-interleave and layer-split shards. Each is the current release's: the hybrid linear pools
read KVWriteLoc.full_loc, the others unwrap the current era's three-field loc (docs/pools.md)."""

from pools.kinds.geometry_rules import v_with_head_dim
from pools.kinds.spec import PoolKind

CURRENT = ("current",)
LINEAR = dict(eras=CURRENT, linear_layers=True, full_loc_by_design=True)
DSA = dict(latent=True, dsa_mla=True, dsa_index=True)

RECORDS = (
    PoolKind("hybrid_linear_mha", "HybridLinearKVPool", "hybrid", 13, **LINEAR),
    PoolKind("hybrid_linear_mla", "HybridLinearKVPool", "hybrid", 14, latent=True, **LINEAR),
    PoolKind("hybrid_linear_dsa", "HybridLinearKVPool", "hybrid", 15, **DSA, **LINEAR),
    PoolKind(
        "minimax_sparse", "MiniMaxSparseKVPool", "hybrid", 16, eras=CURRENT, sparse_index=True
    ),
    PoolKind(
        "hisparse_mha",
        "HiSparseMHAMainPool",
        "hybrid",
        17,
        eras=CURRENT,
        hisparse=True,
        geometry_rules=(v_with_head_dim,),
    ),
    PoolKind(
        "hisparse_dsa", "HiSparseDSATokenToKVPool", "hybrid", 18, eras=CURRENT, hisparse=True, **DSA
    ),
    PoolKind(
        "page_interleave_mha",
        "PageInterleaveMHATokenToKVPool",
        "hybrid",
        19,
        eras=CURRENT,
        page_interleave=True,
    ),
    PoolKind(
        "page_interleave_mla",
        "PageInterleaveMLATokenToKVPool",
        "hybrid",
        20,
        eras=CURRENT,
        latent=True,
        page_interleave=True,
    ),
    PoolKind(
        "page_interleave_dsa",
        "PageInterleaveDSATokenToKVPool",
        "hybrid",
        21,
        eras=CURRENT,
        page_interleave=True,
        **DSA,
    ),
    PoolKind("qsa", "QSATokenToKVPool", "hybrid", 22, qsa=True, **LINEAR),
    PoolKind(
        "layer_split_dsa",
        "LayerSplitDSATokenToKVPool",
        "hybrid",
        25,
        eras=CURRENT,
        layer_split=True,
        **DSA,
    ),
)
