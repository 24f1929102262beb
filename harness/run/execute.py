"""Run one candidate over one scenario and snapshot everything the oracles compare.

Buffers hold a canary byte before the run so that a stray write anywhere shows (a builtin or
judge pool is reused, its last rows restored: pool_cache.py); every buffer and every caller
tensor comes back as CPU bytes."""

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
    CANARY,
    READING,
    STAGING,
    WRITING,
    ErrorPlace,
    Execution,
    as_bytes,
    buffer_names,
)
from harness.plan.candidate import Candidate
from harness.run.nvfp4_page_rows import INDEX_PARTS, MAIN_PARTS, slot_rows
from harness.run.pool_cache import keep_pool, take_pool
from harness.run.pool_factory import build_pool
from harness.run.release_trail import ReleaseTrail
from harness.run.timeout import time_limit
from pools.layouts.kinds import LAYOUT_KINDS
from scenarios.materialize import ForwardStaging, scale_object, token_tensors
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


def pool_buffers(pool: Any, scenario: Scenario, layer_id: int) -> list[torch.Tensor]:
    """Each buffer of a layer as (slots, ...) rows: for page-major and 5-D layouts a permuted
    copy, so that slot s's bytes are row s whatever the layout (pools/layouts/kinds.py), for
    a DSA layer's indexer key cache a row per logical id (_dsa_index_rows), and for a unified SWA
    layer the rows of its own sub-pool (scenarios.slots.unified_swa_rows)."""
    kind = LAYOUT_KINDS.get(scenario.geometry.pool)
    if kind is not None:
        return [
            view(getattr(pool, attribute)[layer_id - getattr(pool, "start_layer", 0)])
            for _, attribute, view in kind.buffers
        ]
    buffers = _raw_buffers(pool, scenario, layer_id)
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
        out_cache_loc_is_physical=not scenario.unmarked_loc,
        padded_out_cache_loc=locs["loc"],
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
        use_sliding_window_kv_pool=g.kind.swa,
    )


def execute(
    candidate: Candidate,
    scenario: Scenario,
    timeout_s: Optional[float] = 30.0,
    backend: Optional[Backend] = None,
    trail: bool = False,
) -> Execution:
    """`backend` defaults to the registry's entry named by the candidate. `trail`: record the
    release functions its writes run (a foreign SUT's; harness/run/release_trail.py), which
    slows every Python call of a write, so only a finding's check is run so once more."""
    backend = backend or backend_named(candidate.backend)
    result = Execution(backend=backend.name)
    place, pool = ErrorPlace(BUILDING), None
    functions = ReleaseTrail(enabled=trail and candidate.foreign)
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
                for layer_id in scenario.layers_of(forward):
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
                    with functions.recording():
                        site = backend.run_write(request, candidate.era, candidate.mode)
                    if site and site not in result.release_sites:
                        result.release_sites += (site,)
                    result.write_ns += time.perf_counter_ns() - started
                    result.caller.update(caller_bytes(request, forward_index))
            place = ErrorPlace(READING)
            result.buffers = buffer_bytes(pool, scenario)
            result.kept_sinks = kept_sinks(pool, scenario)
        keep_pool(lease, scenario)  # a run that raised drops its pool: its state is unknown
    except Exception as error:  # a SUT failure is data, never a harness crash
        place = replace(place, door=door_of(error))
        result.error, result.error_type = describe_error(error), type(error).__name__
        result.error_place, result.error_at = place, place.describe()
        # Decided here, where the exception object is at hand: a worker sends only the name.
        cause = harness_cause(error)
        result.error_cause = cause.name if cause is not None else ""
        _snapshot_after_raise(result, pool, scenario, place)
    result.release_trail = tuple(functions.functions)
    return result


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
