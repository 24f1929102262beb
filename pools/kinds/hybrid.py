"""Pools that hold more than one kind of layer or route a write elsewhere than its loc: the
hybrid linear pools (and QSA's, one of them), MiniMax's sparse pool, the HiSparse device pools,
page-interleave and layer-split shards. Each is the current release's: the hybrid linear pools
read KVWriteLoc.full_loc, the others unwrap the current era's three-field loc (docs/pools.md)."""

from pools.kinds import layer_buffers
from pools.kinds.geometry_rules import v_with_head_dim
from pools.kinds.spec import PoolKind

CURRENT = ("current",)
LINEAR = dict(eras=CURRENT, linear_layers=True, full_loc_by_design=True)
# The DSA backend writes through set_mla_kv_buffer and its indexer through
# set_index_k_scale_buffer; plain's canonical call through set_kv_buffer.
DSA_TRAITS = dict(
    latent=True,
    dsa_mla=True,
    dsa_index=True,
    doors=("set_kv_buffer", "set_mla_kv_buffer", "set_index_k_scale_buffer"),
)

HYBRID_LINEAR_MHA = PoolKind(
    "hybrid_linear_mha", "HybridLinearKVPool", "hybrid", 13, v_as_k=True, **LINEAR
)

HYBRID_LINEAR_MLA = PoolKind(
    "hybrid_linear_mla", "HybridLinearKVPool", "hybrid", 14, latent=True, **LINEAR
)

HYBRID_LINEAR_DSA = PoolKind(
    "hybrid_linear_dsa", "HybridLinearKVPool", "hybrid", 15, **DSA_TRAITS, **LINEAR
)

MINIMAX_SPARSE = PoolKind(
    "minimax_sparse",
    "MiniMaxSparseKVPool",
    "hybrid",
    16,
    eras=CURRENT,
    sparse_index=True,
    v_as_k=True,
    # Its fused door runs its separate stores on a CPU (backends/minimax_sparse.py).
    doors=(
        "set_kv_buffer",
        "set_fused_kv_index_buffer",
        "set_index_kv_buffer",
        "set_index_k_buffer",
        ("MHATokenToKOnlyPool", "set_k_buffer"),
    ),
)

HISPARSE_MHA = PoolKind(
    "hisparse_mha",
    "HiSparseMHAMainPool",
    "hybrid",
    17,
    eras=CURRENT,
    hisparse=True,
    v_as_k=True,
    geometry_rules=(v_with_head_dim,),
)

HISPARSE_DSA = PoolKind(
    "hisparse_dsa",
    "HiSparseDSATokenToKVPool",
    "hybrid",
    18,
    eras=CURRENT,
    hisparse=True,
    **DSA_TRAITS,
)

PAGE_INTERLEAVE_MHA = PoolKind(
    "page_interleave_mha",
    "PageInterleaveMHATokenToKVPool",
    "hybrid",
    19,
    eras=CURRENT,
    page_interleave=True,
)

PAGE_INTERLEAVE_MLA = PoolKind(
    "page_interleave_mla",
    "PageInterleaveMLATokenToKVPool",
    "hybrid",
    20,
    eras=CURRENT,
    latent=True,
    rope_required=True,  # its MLA door index_selects the rope rows
    page_interleave=True,
)

PAGE_INTERLEAVE_DSA = PoolKind(
    "page_interleave_dsa",
    "PageInterleaveDSATokenToKVPool",
    "hybrid",
    21,
    eras=CURRENT,
    page_interleave=True,
    **DSA_TRAITS,
)

QSA = PoolKind(
    "qsa",
    "QSATokenToKVPool",
    "hybrid",
    22,
    qsa=True,
    v_as_k=True,
    # The QSA indexer's three stores beside the full-attention layers' K/V.
    doors=(
        "set_kv_buffer",
        "set_qsa_key_state_buffer",
        "set_qsa_rope_position_buffer",
        "set_qsa_compressed_k_buffer",
    ),
    **LINEAR,
)

LAYER_SPLIT_DSA = PoolKind(
    "layer_split_dsa",
    "LayerSplitDSATokenToKVPool",
    "hybrid",
    25,
    eras=CURRENT,
    layer_split=True,
    buffers=layer_buffers.layer_split,
    **DSA_TRAITS,
)

RECORDS = (
    HYBRID_LINEAR_MHA,
    HYBRID_LINEAR_MLA,
    HYBRID_LINEAR_DSA,
    MINIMAX_SPARSE,
    HISPARSE_MHA,
    HISPARSE_DSA,
    PAGE_INTERLEAVE_MHA,
    PAGE_INTERLEAVE_MLA,
    PAGE_INTERLEAVE_DSA,
    QSA,
    LAYER_SPLIT_DSA,
)
