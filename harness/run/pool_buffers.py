"""A pool's buffers as the oracles read them, each as its kind's record says
(pools/kinds/layer_buffers.py): every layer's buffers as the pool keeps them (what the canary
fills and the pool cache fingerprints), and as CPU bytes by name, one row a slot whatever the
layout (LayerBuffer.rows)."""

from __future__ import annotations

from typing import Any

import torch

from harness.compare.snapshot import CANARY, as_bytes, layer_buffers
from scenarios.model import Scenario


def raw_buffers(pool: Any, scenario: Scenario) -> list[torch.Tensor]:
    """Every layer's buffers as the pool keeps them (what the canary fills)."""
    return [
        buffer.read(pool)
        for layer_id in scenario.geometry.kv_layer_ids
        for buffer in layer_buffers(scenario, layer_id)
    ]


def fill_canary(pool: Any, scenario: Scenario) -> None:
    for buffer in raw_buffers(pool, scenario):
        buffer.view(torch.uint8).fill_(CANARY)


def snapshot(pool: Any, scenario: Scenario) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Every buffer of every layer as CPU bytes, by name, and the dtype SGLang's K/V reader
    (get_key_buffer, get_value_buffer) returns for each buffer read through it: one read of each.
    A buffer read as an attribute (a layout kind's storage) says nothing of a reader."""
    buffers: dict[str, torch.Tensor] = {}
    dtypes: dict[str, str] = {}
    for layer_id in scenario.geometry.kv_layer_ids:
        for buffer in layer_buffers(scenario, layer_id):
            read = buffer.read(pool)
            buffers[buffer.name] = as_bytes(buffer.slot_rows(read))
            if buffer.sglang_reader:
                dtypes[buffer.name] = str(read.dtype)
    return buffers, dtypes


def buffer_bytes(pool: Any, scenario: Scenario) -> dict[str, torch.Tensor]:
    """Every buffer of every layer as CPU bytes, by name."""
    return snapshot(pool, scenario)[0]


def kept_sinks(pool: Any, scenario: Scenario) -> frozenset[str]:
    """The buffers whose reserved slot the pool's store skipped, by name: only the judge's pools
    say so (pools/judge/token_major.py, and its hybrid pools for their sub-pools), and only a
    baseline's are read (the reserved_slot oracle)."""
    kept = getattr(pool, "kept_sinks", None)
    if not kept:
        return frozenset()
    return frozenset(
        buffer.name
        for layer_id in scenario.geometry.kv_layer_ids
        for buffer in layer_buffers(scenario, layer_id)
        if buffer.read(pool).data_ptr() in kept
    )
