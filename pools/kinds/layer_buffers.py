"""A kind's buffers, for a geometry and a layer: each one's name (the snapshot's), how to read it
from a pool as the pool keeps it (what the canary fills and the pool cache fingerprints), and its
rows, one a slot, whatever the layout (what the oracles compare). Each kind's record names its
family's helper (`PoolKind.buffers`); the snapshot, the canary, the pool cache and the oracles
read this one answer, so no module outside pools/kinds/ branches on a kind's trait to find a
buffer or a row. A kind kept outside the tree with an unusual layout names a helper of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from pools.kinds.landing import unified_swa_rows
from pools.kinds.layer_parts import dsa_index_parts, qsa_parts, sparse_index_parts
from pools.kinds.slot_rows import (
    NVFP4_INDEX_PARTS,
    NVFP4_MAIN_PARTS,
    dsa_index_rows,
    dsv4_slot_rows,
    kept,
    nvfp4_slot_rows,
)

Geometry = Any  # scenarios.model.Geometry, a layer above this one
Pool = Any  # a SUT's pool: builtin, the judge's, a release's or a user's
SlotRows = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class LayerBuffer:
    name: str  # "L{layer}.{part}": what the snapshot and every finding call it
    read: Callable[[Pool], torch.Tensor]  # the layer's buffer as the pool keeps it
    slot_rows: SlotRows = kept  # that buffer as one row per slot: (slots, ...), row s slot s's
    # Read through SGLang's K/V reader (get_key_buffer, get_value_buffer), which an attention
    # backend reads the cache by, rather than an attribute: its dtype is part of the verdict.
    sglang_reader: bool = False

    def rows(self, pool: Pool) -> torch.Tensor:
        return self.slot_rows(self.read(pool))


LayerBuffers = Callable[[Geometry, int], tuple[LayerBuffer, ...]]


def _name(layer_id: int, part: str) -> str:
    return f"L{layer_id}.{part}"


def _local(pool: Pool, layer_id: int) -> int:
    """The layer's index into a pool's per-layer lists (a pool may start past layer 0)."""
    return layer_id - getattr(pool, "start_layer", 0)


def token_major(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """SGLang's readers: get_key_buffer (and get_value_buffer, but on a latent kind's one row),
    then the index buffers the layer keeps; a kind that keeps no K/V has the index buffers alone
    (its K/V readers raise)."""
    kv = ()
    if g.kind.keeps_kv:
        key = LayerBuffer(
            _name(layer_id, "kv" if g.kind.latent else "k"),
            lambda pool: pool.get_key_buffer(layer_id),
            sglang_reader=True,
        )
        value = LayerBuffer(
            _name(layer_id, "v"), lambda pool: pool.get_value_buffer(layer_id), sglang_reader=True
        )
        kv = (key,) if g.kind.latent else (key, value)
    return kv + index_buffers(g, layer_id)


def index_buffers(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A layer's buffers beside its K/V: a MiniMax sparse layer's index K (and V), a QSA full
    layer's ring, compressed keys (and, on the first, the ring's positions), a DSA layer's
    indexer key cache, one row a logical id."""
    sparse, qsa = sparse_index_parts(g, layer_id), qsa_parts(g, layer_id)
    if sparse == ("idx_k",):
        return (LayerBuffer(_name(layer_id, "idx_k"), lambda p: p.get_index_k_buffer(layer_id)),)
    if sparse:
        return tuple(
            LayerBuffer(_name(layer_id, part), lambda p, i=i: p.get_index_kv_buffer(layer_id)[i])
            for i, part in enumerate(sparse)
        )
    if qsa:
        readers = {
            "qsa_state": lambda p: p.get_qsa_key_state_buffer(layer_id),
            "qsa_ck": lambda p: p.get_qsa_compressed_k_buffer(layer_id),
            "qsa_rope": lambda p: p.qsa_rope_position_buffer,
        }
        return tuple(LayerBuffer(_name(layer_id, part), readers[part]) for part in qsa)
    return tuple(
        LayerBuffer(
            _name(layer_id, part),
            lambda p: p.get_index_k_with_scale_buffer(layer_id),
            dsa_index_rows,
        )
        for part in dsa_index_parts(g, layer_id)
    )


def layer_split(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A layer-split rank's own storage of every layer: its readers broadcast a peer's layer
    from the owner, so they are not what this rank keeps."""
    kv = LayerBuffer(_name(layer_id, "kv"), lambda p: p.kv_buffer[_local(p, layer_id)])
    return (kv,) + tuple(
        LayerBuffer(
            _name(layer_id, part),
            lambda p: p.index_k_with_scale_buffer[_local(p, layer_id)],
            dsa_index_rows,
        )
        for part in dsa_index_parts(g, layer_id)
    )


def unified_swa(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A unified SWA pool's layer: its sub-pool's views span the whole shared buffer, and its rows
    are the sub-pool's own (pools/kinds/landing.py unified_swa_rows)."""
    start, stop = unified_swa_rows(g, layer_id)
    return tuple(
        LayerBuffer(buffer.name, buffer.read, lambda t, rows=buffer.slot_rows: rows(t)[start:stop])
        for buffer in token_major(g, layer_id)
    )


def dsv4(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A DeepSeek V4 layer: one K-only latent buffer of page rows, read as a row per slot."""
    page = g.page_size
    return (
        LayerBuffer(
            _name(layer_id, "kv"),
            lambda p: p.get_key_buffer(layer_id),
            lambda t: dsv4_slot_rows(t, page),
        ),
    )


def nvfp4_page_rows(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A MiniMax M3 NVFP4 layer: each sub-pool's (pages, row_bytes) page rows, as a slot's [K, K
    scale, V, V scale] bytes (main) and its index K and scale (index)."""

    def main(pool: Pool) -> torch.Tensor:
        return pool.main_pool.rows[layer_id - pool.main_pool.start_layer]

    def index(pool: Pool) -> torch.Tensor:
        index_layer = pool.index_k_layer_id_mapping[layer_id]
        return pool.index_k_pool.rows[index_layer - pool.index_k_pool.start_layer]

    heads = g.head_num
    return (
        LayerBuffer(
            _name(layer_id, "main"), main, lambda t: nvfp4_slot_rows(t, heads, NVFP4_MAIN_PARTS)
        ),
        LayerBuffer(
            _name(layer_id, "index"), index, lambda t: nvfp4_slot_rows(t, 1, NVFP4_INDEX_PARTS)
        ),
    )


def layout(*buffers: tuple[str, str, SlotRows]) -> LayerBuffers:
    """A layout kind's helper: each (name suffix, pool attribute holding a per-layer list, how a
    layer's buffer becomes rows)."""

    def layer_buffers(g: Geometry, layer_id: int) -> tuple[LayerBuffer, ...]:
        return tuple(
            LayerBuffer(
                _name(layer_id, part),
                lambda p, attribute=attribute: getattr(p, attribute)[_local(p, layer_id)],
                rows,
            )
            for part, attribute, rows in buffers
        )

    return layer_buffers
