"""Run one candidate over one scenario and snapshot everything the oracles compare.

Buffers hold a canary byte before the run so that a stray write anywhere shows (a builtin or
judge pool is reused, its last rows restored: pool_cache.py); every buffer (read as
pool_buffers.py says) and every caller tensor comes back as CPU bytes."""

from __future__ import annotations

import time
import traceback
from dataclasses import replace
from typing import Any, Optional

import torch

from backends.context import Layer, Metadata, WriteRequest
from backends.registry import Backend, backend_named
from backends.release_batch import forward_batch
from harness.compare.error_causes import harness_cause
from harness.compare.snapshot import (
    BUILDING,
    CALLER_TENSORS,
    READING,
    STAGING,
    WRITING,
    ErrorPlace,
    Execution,
    as_bytes,
)
from harness.plan.candidate import Candidate
from harness.run.pool_buffers import buffer_bytes, fill_canary, kept_sinks, snapshot
from harness.run.pool_cache import keep_pool, take_pool
from harness.run.pool_factory import build_pool
from harness.run.release_lines import unmeasured
from harness.run.release_trail import ReleaseTrail
from harness.run.timeout import time_limit
from harness.sut.load.gpu_only_stops import stand_in_stop
from scenarios.materialize import ForwardStaging, scale_object, token_tensors
from scenarios.model import Scenario

# The pool methods a call site or the harness calls: the door an exception came through.
POOL_METHODS = (
    "set_kv_buffer",
    "set_mla_kv_buffer",
    "register_mapping",
    "get_key_buffer",
    "get_value_buffer",
    "translate_loc_from_full_to_swa",
    "set_fused_kv_index_buffer",
    "set_index_kv_buffer",
    "set_index_k_buffer",
    "set_k_buffer",
    "get_index_k_buffer",
    "get_index_kv_buffer",
    "set_kv_buffer_prefix_valid",
    "set_qsa_key_state_buffer",
    "set_qsa_rope_position_buffer",
    "set_qsa_compressed_k_buffer",
    "get_qsa_key_state_buffer",
    "get_qsa_compressed_k_buffer",
    "set_index_k_scale_buffer",
    "get_index_k_with_scale_buffer",
    "set_key_buffer",
    "set_key_buffer_fused",
    "set_quantized_kv_buffer",
    "set_quantized_k_buffer",
)


def caller_bytes(request: WriteRequest, forward_index: int) -> dict[str, torch.Tensor]:
    """The caller's tensors after the call, as CPU bytes (in-place mutation is observable)."""
    prefix = f"f{forward_index}.L{request.layer.layer_id}"
    return {
        f"{prefix}.{name}": as_bytes(getattr(request, name)).flatten()
        for name in CALLER_TENSORS
        if getattr(request, name) is not None
    }


def write_request(
    module: Any,
    device: str,
    backend: Backend,
    pool: Any,
    scenario: Scenario,
    forward_index: int,
    layer_id: int,
    locs: dict,
    scales: tuple,
) -> WriteRequest:
    """What the backend's call site has at hand for one (forward, layer)."""
    forward = scenario.forwards[forward_index]
    g = scenario.geometry
    tensors = token_tensors(scenario, forward_index, layer_id, device)
    k, k_rope = tensors["k"], tensors["k_rope"]
    if g.kind.latent and backend.mla_input == "latent" and k_rope is not None:
        # The backend receives the latent row (nope ++ rope) as one tensor, as its model hands it.
        k, k_rope = torch.cat([k, k_rope], dim=-1), None
    metadata = Metadata(
        swa_out_cache_loc=locs["swa"],
        encoder_swa_out_cache_loc=locs["encoder_swa"],
        full_loc=locs["full"],  # padded, as a capture-stable buffer is: KVWriteLoc cuts it
        commit_lens=None
        if forward.commit_lens is None
        else torch.tensor(forward.commit_lens, dtype=torch.int32, device=device),
        **(locs["qsa_plan"] if g.qsa_parts(layer_id) else {}),
    )
    k_scale, v_scale = scales
    k_scale_float = None if k_scale is None else float(k_scale)
    v_scale_float = None if v_scale is None else float(v_scale)
    layer = Layer(
        layer_id,
        is_cross_attention=layer_id in forward.cross_layers,
        k_scale=k_scale,
        v_scale=v_scale,
        k_scale_float=k_scale_float,
        v_scale_float=v_scale_float,
        sliding_window_size=g.size_swa if layer_id in g.swa_layer_ids else -1,
        v_head_dim=g.kv_lora_rank if g.kind.latent else (g.v_head_dim or g.head_dim),
        # A MiniMax model hands its index branch the layer's own scales.
        idx_k_scale_float=k_scale_float,
        idx_v_scale_float=v_scale_float,
    )
    encoder = None if locs["encoder"] is None else locs["encoder"][: forward.tokens]
    batch = forward_batch(
        module,
        out_cache_loc=locs["loc"][: forward.tokens],
        encoder_out_cache_loc=encoder,
        token_to_kv_pool=pool,
        physical=not scenario.unmarked_loc,
        padded_out_cache_loc=locs["loc"],
        positions=locs["positions"],
        requests=forward.written_requests(),
        extend_lens_on_host=forward.extend_lens_on_host,
    )
    return WriteRequest(
        api=module,
        pool=pool,
        forward_batch=batch,
        layer=layer,
        metadata=metadata,
        k=k,
        v=tensors["v"],
        k_rope=k_rope,
        idx_k=tensors.get("idx_k"),
        idx_v=tensors.get("idx_v"),
        qsa_state=tensors.get("qsa_state"),
        qsa_ck=tensors.get("qsa_ck"),
        index_k=tensors.get("index_k"),
        index_k_scale=tensors.get("index_k_scale"),
        is_mla=g.kind.latent,
        pool_kind=g.pool,
        dcp_size=g.dcp_size,
        dcp_rank=g.dcp_rank,
        use_sliding_window_kv_pool=g.kind.swa,
        save_kv_cache=layer_id not in forward.unsaved_layers,
    )


# Runs of one execution at most, each after a GPU-only import that stopped the one before was
# stood in (harness/sut/load/sglang_standins.py stand_in_stop).
STOP_ROUNDS = 8


def execute(
    candidate: Candidate,
    scenario: Scenario,
    timeout_s: Optional[float] = 30.0,
    backend: Optional[Backend] = None,
    trail: bool = False,
) -> Execution:
    """`backend` defaults to the registry's entry named by the candidate. `trail`: record the
    release functions its writes run (a foreign SUT's; harness/run/release_trail.py), which
    slows every Python call of a write, so only a finding's check is run once more. A write
    whose import chain stopped on a GPU-only module runs again once that module is stood in."""
    for _ in range(STOP_ROUNDS):
        result, stopped = _execute(candidate, scenario, timeout_s, backend, trail)
        if not stopped:
            break
    return result


def _execute(
    candidate: Candidate,
    scenario: Scenario,
    timeout_s: Optional[float],
    backend: Optional[Backend],
    trail: bool,
) -> tuple[Execution, bool]:
    """One run, and whether it stopped on a GPU-only import that is now stood in."""
    backend = backend or backend_named(candidate.backend)
    stopped = False
    result = Execution(backend=backend.name)
    place, pool = ErrorPlace(BUILDING), None
    functions = ReleaseTrail(enabled=trail and candidate.foreign)
    run_write = functions.recording(backend.run_write)  # as it is, where not recording
    # Told not to save, a forward's path past its save test is attention: neither its trail
    # nor its lines are the write path's.
    run_unsaved = unmeasured(backend.run_write)
    try:
        with time_limit(timeout_s):
            # A reusable pool comes back with the canary in every buffer (pool_cache.py).
            pool, lease = take_pool(
                candidate.module, scenario, candidate.device, build_pool, fill_canary
            )
            staging = ForwardStaging(scenario, candidate.device, pool)
            scales = (
                scale_object(scenario.k_scale, candidate.device),
                scale_object(scenario.v_scale, candidate.device),
            )
            for forward_index, forward in enumerate(scenario.forwards):
                place = ErrorPlace(STAGING, forward_index)
                locs = staging.begin(forward_index)
                for layer_id in scenario.called_layers(forward):
                    place = ErrorPlace(WRITING, forward_index, layer_id)
                    request = write_request(
                        candidate.module,
                        candidate.device,
                        backend,
                        pool,
                        scenario,
                        forward_index,
                        layer_id,
                        locs,
                        scales,
                    )
                    started = time.perf_counter_ns()
                    write = run_write if request.save_kv_cache else run_unsaved
                    site = write(request, candidate.era, candidate.mode)
                    if site and site not in result.release_sites:
                        result.release_sites += (site,)
                    result.write_ns += time.perf_counter_ns() - started
                    result.caller.update(caller_bytes(request, forward_index))
            place = ErrorPlace(READING)
            result.buffers, result.reader_dtypes = snapshot(pool, scenario)
            result.kept_sinks = kept_sinks(pool, scenario)
        keep_pool(lease, scenario)  # a run that raised drops its pool: its state is unknown
    except Exception as error:  # a SUT failure is data, never a harness crash
        stopped = stand_in_stop(error)
        place = replace(place, door=door_of(error))
        result.error, result.error_type = describe_error(error), type(error).__name__
        result.error_place, result.error_at = place, place.describe()
        # Decided here, where the exception object is at hand: a worker sends only the name.
        cause = harness_cause(error)
        result.error_cause = cause.name if cause is not None else ""
        _snapshot_after_raise(result, pool, scenario, place)
    result.release_trail = tuple(functions.functions)
    return result, stopped


def door_of(error: BaseException) -> str:
    """The outermost pool method on the traceback: the door the call site went through."""
    return next(
        (
            frame.name
            for frame in traceback.extract_tb(error.__traceback__)
            if frame.name in POOL_METHODS
        ),
        "",
    )


def _snapshot_after_raise(
    result: Execution, pool: Any, scenario: Scenario, place: ErrorPlace
) -> None:
    """The buffers as the raise left them (the caller's tensors of the calls that completed are
    in `result.caller` already). A pool that raised may be in any state: a snapshot that fails
    leaves the execution without one, and never crashes the harness."""
    if pool is None or place.stage == READING:
        return
    try:
        result.buffers = buffer_bytes(pool, scenario)
    except Exception:  # noqa: BLE001 (a broken SUT's buffers are not comparable: none is kept)
        result.buffers = {}


def describe_error(error: BaseException, source_line: bool = False) -> str:
    """`Type: message (file:line)`, where the exception was raised. `source_line` adds the line's
    code, which is all a bare `assert` says, and drops the empty message such an assert has."""
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        code = f": {last.line}" if source_line and last.line else ""
        where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno}{code})"
    message = f": {error}" if str(error) or not source_line else ""
    return f"{type(error).__name__}{message}{where}"
