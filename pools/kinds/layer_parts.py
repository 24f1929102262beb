"""Which parts a layer of a kind keeps and writes beside its K/V, for a geometry: the index
buffers of a MiniMax sparse layer, a QSA full layer and a DSA layer, and the index tensors their
callers hand beside k and v. The scenario model (`Geometry.index_parts`, ...) and the kinds'
buffers (layer_buffers.py) read them."""

from __future__ import annotations

from typing import Any

from pools.kinds.fixed_geometry import (
    DSA_INDEX_HEAD_DIM,
    NVFP4_HEAD_DIM,
    QSA_INDEX_HEAD_DIM,
    QSA_INDEX_HEADS,
    QSA_PARTS,
)

Geometry = Any  # scenarios.model.Geometry, a layer above this one


def sparse_index_parts(g: Geometry, layer_id: int) -> tuple[str, ...]:
    """The index buffers a MiniMax sparse layer keeps beside its K/V: ("idx_k", "idx_v"),
    ("idx_k",) for a value-disabled sparse layer, () for a dense one."""
    if layer_id not in g.sparse_layer_ids:
        return ()
    return ("idx_k",) if layer_id in g.k_only_layer_ids else ("idx_k", "idx_v")


def qsa_parts(g: Geometry, layer_id: int) -> tuple[str, ...]:
    """A QSA full layer's index buffers (the shared RoPE positions with the first's)."""
    if not g.kind.qsa or layer_id not in g.kv_layer_ids:
        return ()
    first = layer_id == g.kv_layer_ids[0]
    return QSA_PARTS + (("qsa_rope",) if first else ())


def dsa_index_parts(g: Geometry, layer_id: int) -> tuple[str, ...]:
    """A DSA layer's indexer key cache (fp8 keys and their float32 scales, by logical id)."""
    if not g.kind.dsa_index or layer_id in g.swa_layer_ids:
        return ()
    return ("index_k",)


def index_draws(g: Geometry, layer_id: int) -> tuple[tuple[str, ...], tuple[int, int, int]]:
    """The index tensors a layer's caller hands beside k and v, and their (heads, dim, dim)
    draw: a MiniMax sparse layer's idx_k/idx_v, a QSA full layer's token and compressed keys, a
    DSA layer's indexer key and its one block scale; () where it has none."""
    if qsa_parts(g, layer_id):
        return QSA_PARTS, (QSA_INDEX_HEADS, QSA_INDEX_HEAD_DIM, QSA_INDEX_HEAD_DIM)
    if dsa_index_parts(g, layer_id):
        return ("index_k", "index_k_scale"), (1, DSA_INDEX_HEAD_DIM, 1)
    if g.kind.nvfp4_page_rows:  # the indexer's one K head, which the pool keeps K-only
        return ("idx_k",), (1, NVFP4_HEAD_DIM, NVFP4_HEAD_DIM)
    return sparse_index_parts(g, layer_id), (1, g.index_head_dim, g.index_head_dim)
