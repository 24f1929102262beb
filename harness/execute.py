"""Run one candidate over one scenario and snapshot everything the oracles compare.

Buffers are pre-filled with a canary byte so that a stray write anywhere shows; every buffer
and every caller tensor comes back as CPU bytes.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from backends.context import ForwardBatch, Layer, Metadata, WriteRequest
from backends.registry import backend_named
from harness.candidate import Candidate
from harness.pool_factory import build_pool
from harness.timeout import time_limit
from scenarios.materialize import loc_tensor, mapping_tensor, scale_object, token_tensors
from scenarios.model import Scenario

CANARY = 0xA5


@dataclass
class Execution:
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)   # name -> (rows, bytes) uint8
    caller: dict[str, torch.Tensor] = field(default_factory=dict)    # name -> flat uint8
    error: Optional[str] = None
    error_at: Optional[str] = None
    write_ns: int = 0


def as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach().to("cpu").contiguous()
    rows = tensor.shape[0] if tensor.dim() else 1
    return tensor.reshape(rows, -1).view(torch.uint8) if tensor.numel() else tensor.view(torch.uint8)


def buffer_names(scenario: Scenario, layer_id: int) -> tuple[str, ...]:
    return (f"L{layer_id}.kv",) if scenario.geometry.is_mla else (f"L{layer_id}.k", f"L{layer_id}.v")


def _buffers(pool: Any, scenario: Scenario, layer_id: int) -> list[torch.Tensor]:
    if scenario.geometry.is_mla:
        return [pool.get_key_buffer(layer_id)]
    return [pool.get_key_buffer(layer_id), pool.get_value_buffer(layer_id)]


def _fill_canary(pool: Any, scenario: Scenario) -> None:
    for layer_id in range(scenario.geometry.layer_num):
        for buffer in _buffers(pool, scenario, layer_id):
            buffer.view(torch.uint8).fill_(CANARY)


def _request(candidate: Candidate, pool: Any, scenario: Scenario, forward_index: int,
             layer_id: int, locs: dict, scales: tuple) -> WriteRequest:
    forward = scenario.forwards[forward_index]
    g = scenario.geometry
    tensors = token_tensors(scenario, forward_index, layer_id, candidate.device)
    metadata = Metadata(swa_out_cache_loc=locs["swa"], encoder_swa_out_cache_loc=locs["encoder_swa"])
    k_scale, v_scale = scales
    layer = Layer(layer_id, is_cross_attention=layer_id in forward.cross_layers, k_scale=k_scale,
                  v_scale=v_scale,
                  k_scale_float=None if k_scale is None else float(k_scale),
                  v_scale_float=None if v_scale is None else float(v_scale))
    batch = ForwardBatch(out_cache_loc=locs["loc"][: forward.tokens],
                         encoder_out_cache_loc=locs["encoder"], token_to_kv_pool=pool)
    return WriteRequest(api=candidate.module, pool=pool, forward_batch=batch, layer=layer,
                        metadata=metadata, k=tensors["k"], v=tensors["v"], k_rope=tensors["k_rope"],
                        is_mla=g.is_mla, use_sliding_window_kv_pool=g.is_swa)


def _forward_locs(scenario: Scenario, forward_index: int, device: str) -> dict:
    """Locs of one forward; SWA locs are translated once from the padded loc, as backends do."""
    forward = scenario.forwards[forward_index]
    loc = loc_tensor(forward.loc, scenario, device)
    encoder = None if forward.encoder_loc is None else loc_tensor(forward.encoder_loc, scenario, device)
    mapping = mapping_tensor(scenario, device)
    if mapping is not None:
        swa = mapping[loc]
        encoder_swa = None if encoder is None else mapping[encoder]
    elif scenario.stray_swa_loc:
        # Junk that a non-SWA pool must ignore: slot ids in reverse order.
        swa, encoder_swa = loc.flip(0), None if encoder is None else encoder.flip(0)
    else:
        swa = encoder_swa = None
    return {"loc": loc, "encoder": encoder, "swa": swa, "encoder_swa": encoder_swa}


def execute(candidate: Candidate, scenario: Scenario, timeout_s: Optional[float] = 30.0) -> Execution:
    result = Execution()
    backend = backend_named(candidate.backend)
    where = "building the pool"
    try:
        with time_limit(timeout_s):
            pool = build_pool(candidate.module, scenario, candidate.device)
            _fill_canary(pool, scenario)
            scales = (scale_object(scenario.k_scale, candidate.device),
                      scale_object(scenario.v_scale, candidate.device))
            for forward_index, forward in enumerate(scenario.forwards):
                locs = _forward_locs(scenario, forward_index, candidate.device)
                for layer_id in scenario.layers_of(forward):
                    where = f"forward {forward_index}, layer {layer_id}"
                    request = _request(candidate, pool, scenario, forward_index, layer_id, locs, scales)
                    started = time.perf_counter_ns()
                    backend.write(request, candidate.era, candidate.mode)
                    result.write_ns += time.perf_counter_ns() - started
                    prefix = f"f{forward_index}.L{layer_id}"
                    for name in ("k", "v", "k_rope"):
                        tensor = getattr(request, name)
                        if tensor is not None:
                            result.caller[f"{prefix}.{name}"] = as_bytes(tensor).flatten()
            where = "reading the buffers"
            for layer_id in range(scenario.geometry.layer_num):
                for name, buffer in zip(buffer_names(scenario, layer_id),
                                        _buffers(pool, scenario, layer_id)):
                    result.buffers[name] = as_bytes(buffer)
    except Exception as error:  # a SUT failure is data, never a harness crash
        frames = traceback.extract_tb(error.__traceback__)
        origin = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
        result.error = f"{type(error).__name__}: {error}{origin}"
        result.error_at = where
    return result
