"""A pool's buffers as the oracles read them: every layer's buffers as the pool keeps them (what
the canary fills and the pool cache fingerprints), and as (slots, ...) rows whatever the layout,
as CPU bytes by name."""

from __future__ import annotations

from typing import Any

import torch

from harness.compare.snapshot import CANARY, as_bytes, buffer_names
from harness.run.nvfp4_page_rows import INDEX_PARTS, MAIN_PARTS, slot_rows
from pools.builtin.layouts.kinds import LAYOUT_KINDS
from scenarios.model import (
    DSA_INDEX_HEAD_DIM,
    DSA_INDEX_PAGE,
    DSV4_NOPE_DIM,
    DSV4_ROPE_DIM,
    Scenario,
)
from scenarios.slots import unified_swa_rows

# A DeepSeek V4 slot's bytes: fp8 NoPE and bf16 RoPE, then 7 scales and a pad byte (V4
# layout); or NoPE and RoPE as e4m3 (uniform FP8).
DSV4_DATA_ROW, DSV4_SCALE_ROW = DSV4_NOPE_DIM + 2 * DSV4_ROPE_DIM, DSV4_NOPE_DIM // 64 + 1
DSV4_UNIFORM_ROW = DSV4_NOPE_DIM + DSV4_ROPE_DIM


def pool_buffers(pool: Any, scenario: Scenario, layer_id: int) -> list[torch.Tensor]:
    """Each buffer of a layer as (slots, ...) rows: for page-major and 5-D layouts a permuted
    copy, so that slot s's bytes are row s whatever the layout (pools/builtin/layouts/kinds.py), for
    a DSA layer's indexer key cache a row per logical id (_dsa_index_rows), and for a unified SWA
    layer the rows of its own sub-pool (scenarios.slots.unified_swa_rows)."""
    buffers = _raw_buffers(pool, scenario, layer_id)
    kind = LAYOUT_KINDS.get(scenario.geometry.pool)
    if kind is not None:
        return [view(buffer) for buffer, (_, _, view) in zip(buffers, kind.buffers)]
    g = scenario.geometry
    if g.kind.nvfp4_page_rows:  # page rows as slot rows (harness/run/nvfp4_page_rows.py)
        main, index = buffers
        return [slot_rows(main, g.head_num, MAIN_PARTS), slot_rows(index, 1, INDEX_PARTS)]
    if g.dsa_index_parts(layer_id):
        buffers[-1] = _dsa_index_rows(buffers[-1])
    if g.kind.dsv4:
        buffers = [dsv4_slot_rows(buffers[0], g.page_size)]
    if g.kind.unified_swa:  # each sub-pool's views span the whole shared buffer
        start, stop = unified_swa_rows(g, layer_id)
        buffers = [buffer[start:stop] for buffer in buffers]
    return buffers


def _raw_buffers(pool: Any, scenario: Scenario, layer_id: int) -> list[torch.Tensor]:
    """Each buffer of a layer as the pool keeps it, in buffer_names' order."""
    kind = LAYOUT_KINDS.get(scenario.geometry.pool)
    if kind is not None:
        return [
            getattr(pool, attribute)[layer_id - getattr(pool, "start_layer", 0)]
            for _, attribute, _ in kind.buffers
        ]
    g = scenario.geometry
    if g.kind.nvfp4_page_rows:  # each sub-pool's (pages, row_bytes) page rows of the layer
        main, index = pool.main_pool, pool.index_k_pool
        return [
            main.rows[layer_id - main.start_layer],
            index.rows[pool.index_k_layer_id_mapping[layer_id] - index.start_layer],
        ]
    if g.kind.layer_split:  # its readers broadcast a peer's layer from the owner: local storage
        local = layer_id - getattr(pool, "start_layer", 0)
        return [pool.kv_buffer[local], pool.index_k_with_scale_buffer[local]]
    if not g.kind.keeps_kv:  # indexer keys alone: its K/V readers raise
        return _index_buffers(pool, scenario, layer_id)
    kv = [pool.get_key_buffer(layer_id)]
    if not g.kind.latent:
        kv.append(pool.get_value_buffer(layer_id))
    return kv + _index_buffers(pool, scenario, layer_id)


def _index_buffers(pool: Any, scenario: Scenario, layer_id: int) -> list[torch.Tensor]:
    """A layer's buffers beside its K/V: a MiniMax sparse layer's index K (and V), a QSA full
    layer's ring, compressed keys (and, on the first, the ring's positions), a DSA layer's
    indexer key cache."""
    g = scenario.geometry
    index_parts, qsa_parts = g.index_parts(layer_id), g.qsa_parts(layer_id)
    if index_parts == ("idx_k",):
        return [pool.get_index_k_buffer(layer_id)]
    if index_parts:
        return list(pool.get_index_kv_buffer(layer_id))
    if qsa_parts:
        rope = [pool.qsa_rope_position_buffer] if "qsa_rope" in qsa_parts else []
        ring, compressed = (
            pool.get_qsa_key_state_buffer(layer_id),
            pool.get_qsa_compressed_k_buffer(layer_id),
        )
        return [ring, compressed, *rope]
    if g.dsa_index_parts(layer_id):
        return [pool.get_index_k_with_scale_buffer(layer_id)]
    return []


def _dsa_index_rows(buffer: torch.Tensor) -> torch.Tensor:
    """A DSA indexer key cache, (pages, page * (128 + 4)) bytes, as a copy with one row per
    logical id: the id's 128 key bytes, then its 4 scale bytes. Every width is explicit, so a
    cache of no pages (a layer-split peer's layer) gives no rows too."""
    pages, keys = buffer.shape[0], DSA_INDEX_PAGE * DSA_INDEX_HEAD_DIM
    scale_bytes = (buffer.shape[1] - keys) // DSA_INDEX_PAGE
    key = buffer[:, :keys].reshape(pages, DSA_INDEX_PAGE, DSA_INDEX_HEAD_DIM)
    scale = buffer[:, keys:].reshape(pages, DSA_INDEX_PAGE, scale_bytes)
    row = DSA_INDEX_HEAD_DIM + scale_bytes
    return torch.cat([key, scale], dim=-1).reshape(pages * DSA_INDEX_PAGE, row)


def dsv4_slot_rows(buffer: torch.Tensor, page_size: int) -> torch.Tensor:
    """A DeepSeek V4 layer as a copy with one row per slot. V4 layout, (pages, ceil(P * 584 /
    576) * 576) bytes: the slot's 576 data bytes at o * 576, then its 8 scale bytes (7 and a pad)
    at P * 576 + o * 8; the page tail past P * 584 is no slot's. Uniform FP8: 512 bytes a slot."""
    raw = buffer.view(torch.uint8)
    pages = raw.shape[0]
    if raw.shape[1] == page_size * DSV4_UNIFORM_ROW:
        return raw.reshape(pages * page_size, DSV4_UNIFORM_ROW)
    data = raw[:, : page_size * DSV4_DATA_ROW].reshape(pages, page_size, DSV4_DATA_ROW)
    scale_end = page_size * (DSV4_DATA_ROW + DSV4_SCALE_ROW)
    scale = raw[:, page_size * DSV4_DATA_ROW : scale_end].reshape(pages, page_size, DSV4_SCALE_ROW)
    return torch.cat([data, scale], dim=-1).reshape(pages * page_size, -1)


def raw_buffers(pool: Any, scenario: Scenario) -> list[torch.Tensor]:
    """Every layer's buffers as the pool keeps them (what the canary fills)."""
    g = scenario.geometry
    return [b for layer_id in g.kv_layer_ids for b in _raw_buffers(pool, scenario, layer_id)]


def fill_canary(pool: Any, scenario: Scenario) -> None:
    for buffer in raw_buffers(pool, scenario):
        buffer.view(torch.uint8).fill_(CANARY)


def buffer_bytes(pool: Any, scenario: Scenario) -> dict[str, torch.Tensor]:
    """Every buffer of every layer as CPU bytes, by name."""
    return {
        name: as_bytes(buffer)
        for layer_id in scenario.geometry.kv_layer_ids
        for name, buffer in zip(
            buffer_names(scenario, layer_id), pool_buffers(pool, scenario, layer_id)
        )
    }


def kept_sinks(pool: Any, scenario: Scenario) -> frozenset[str]:
    """The buffers whose reserved slot the pool's store skipped, by name: only the judge's pools
    say so (pools/judge/token_major.py, and its hybrid pools for their sub-pools), and only a
    baseline's are read (the reserved_slot oracle)."""
    kept = getattr(pool, "kept_sinks", None)
    if not kept:
        return frozenset()
    return frozenset(
        name
        for layer_id in scenario.geometry.kv_layer_ids
        for name, buffer in zip(
            buffer_names(scenario, layer_id), _raw_buffers(pool, scenario, layer_id)
        )
        if buffer.data_ptr() in kept
    )
