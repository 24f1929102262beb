"""Scenario <-> JSON, with validation that turns bad input into one clear ScenarioError."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from pools.dtypes import DTYPES
from pools.kinds.fixed_geometry import (
    DSV4_NOPE_DIM,
    DSV4_ROPE_DIM,
    NVFP4_HEAD_DIM,
    NVFP4_PAGE,
    QSA_COMPRESS_RATIO,
)
from scenarios.model import (
    DSA_INDEX_KINDS,
    POOL_KINDS,
    SCALE_KINDS,
    VALUE_KINDS,
    Forward,
    Geometry,
    Remap,
    RequestSpan,
    Scale,
    Scenario,
)


class ScenarioError(ValueError):
    """A scenario that cannot be run as written (bad field, out-of-range slot, ...)."""


def to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (what dataclasses.asdict gives), without asdict's deep copy of
    every slot id: a reach scenario's mapping holds 2^17 of them, and a SUT worker is sent a
    scenario per check."""
    return _plain(scenario)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        if set(map(type, value)) <= {int}:  # slot ids: a copy, not one per item (checked in C)
            return list(value) if isinstance(value, list) else value
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)}")
    try:
        return cls(**data)
    except TypeError as error:
        raise ScenarioError(f"{where}: {error}") from None


def _forward(data: Any, where: str) -> Forward:
    forward = _build(Forward, data, where)
    if forward.remap is not None:
        forward.remap = _build(Remap, forward.remap, f"{where}.remap")
    if forward.requests is not None:
        if not isinstance(forward.requests, list):
            raise ScenarioError(f"{where}.requests: expected a list")
        forward.requests = [
            _build(RequestSpan, span, f"{where}.requests[{i}]")
            for i, span in enumerate(forward.requests)
        ]
    return forward


def from_dict(data: Any) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("scenario: expected an object")
    fields = dict(data)
    try:
        fields["geometry"] = _build(Geometry, fields["geometry"], "geometry")
        fields["forwards"] = [
            _forward(f, f"forwards[{i}]") for i, f in enumerate(fields["forwards"])
        ]
    except KeyError as missing:
        raise ScenarioError(f"scenario: missing field {missing}") from None
    for scale in ("k_scale", "v_scale"):
        if scale in fields:
            fields[scale] = _build(Scale, fields[scale], scale)
    scenario = _build(Scenario, fields, "scenario")
    validate(scenario)
    return scenario


def layout_problem(g: Geometry) -> Optional[str]:
    """Why a pool kind cannot hold this geometry (what its SGLang constructor asserts), or None:
    first what every FP4 or unified SWA kind shares, then the kind's own rules (its record's
    geometry_rules, pools/kinds/geometry_rules.py)."""
    if g.kind.fp4:
        widths = (
            (g.kv_lora_rank, g.qk_rope_head_dim) if g.kind.latent else (g.head_num * g.head_dim,)
        )
        if any(width % 16 for width in widths) or (not g.kind.latent and g.head_dim % 2):
            return f"{g.pool} needs 16-value FP4 blocks per part and an even head_dim"
        if not g.kind.latent and g.v_head_dim not in (None, g.head_dim):
            return f"{g.pool} stores V with head_dim: v_head_dim must equal it"
    if g.kind.unified_swa and len(g.swa_layer_ids) > len(g.full_layer_ids):
        # Else SGLang's reserved floor (page 0 of the wider entry) covers full slots past page 0,
        # which its allocator then never hands out, and the scenarios' full locs would.
        return f"{g.pool} needs at most as many SWA layers as full ones"
    return next(filter(None, (rule(g) for rule in g.kind.geometry_rules)), None)


def validate(scenario: Scenario) -> None:
    g = scenario.geometry
    if g.pool not in POOL_KINDS:
        raise ScenarioError(f"unknown pool kind {g.pool!r}; choose from {', '.join(POOL_KINDS)}")
    for dtype in (g.dtype, scenario.input_dtype):
        if dtype is not None and dtype not in DTYPES:
            raise ScenarioError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    if scenario.loc_dtype not in ("int32", "int64"):
        raise ScenarioError(f"loc_dtype must be int32 or int64, not {scenario.loc_dtype!r}")
    for scale in (scenario.k_scale, scenario.v_scale):
        if scale.kind not in SCALE_KINDS:
            raise ScenarioError(f"unknown scale kind {scale.kind!r}")
    if scenario.values not in VALUE_KINDS:
        raise ScenarioError(
            f"values must be one of {', '.join(VALUE_KINDS)}, not {scenario.values!r}"
        )
    if g.size < 1 or g.page_size < 1 or g.layer_num < 1:
        raise ScenarioError("size, page_size and layer_num must be positive")
    if g.start_layer and (g.start_layer < 0 or not g.kind.pipeline_rank):
        raise ScenarioError(
            f"start_layer {g.start_layer}: only a pipeline rank's pool starts past layer 0 "
            "(PoolKind.pipeline_rank: MHA, MLA and HND)"
        )
    _check_dcp_rank(g)
    problem = layout_problem(g)
    if problem:
        raise ScenarioError(problem)
    if g.linear_layer_ids and not g.kind.linear_layers:
        raise ScenarioError(f"only a hybrid linear pool has linear layers, not {g.pool}")
    if g.kind.linear_layers:
        if not g.full_layer_ids or any(not 0 <= i < g.layer_num for i in g.linear_layer_ids):
            raise ScenarioError(
                "a hybrid linear pool needs a full-attention layer and linear layer ids in "
                f"[0, {g.layer_num})"
            )
        if not g.kind.latent and g.v_head_dim not in (None, g.head_dim):
            raise ScenarioError("a hybrid linear MHA pool stores V with head_dim")
    _check_sparse(g)
    _check_hisparse(g)
    _check_dsv4(g)
    _check_nvfp4_page_rows(g)
    if g.kind.qsa and (g.page_size <= 1 or g.page_size % QSA_COMPRESS_RATIO):
        raise ScenarioError(
            f"a QSA pool's pages are a multiple of the compress ratio {QSA_COMPRESS_RATIO}, above 1"
        )
    if g.kind.swa:
        if not g.swa_layer_ids or not g.full_layer_ids:
            raise ScenarioError("a SWA pool needs at least one SWA and one full layer")
        if scenario.mapping is None or len(scenario.mapping) != g.size + g.page_size:
            raise ScenarioError(
                f"a SWA pool needs a mapping of size + page_size = {g.size + g.page_size} entries"
            )
        _check_slots(scenario.mapping, g.size_swa + g.page_size, "mapping")
    for index, forward in enumerate(scenario.forwards):
        where = f"forwards[{index}]"
        _check_slots(forward.loc, g.loc_slots, f"{where}.loc")
        if forward.narrow is not None and not 0 <= forward.narrow <= len(forward.loc):
            raise ScenarioError(f"{where}.narrow={forward.narrow} outside [0, {len(forward.loc)}]")
        for layer in scenario.called_layers(forward) + forward.cross_layers:
            if layer not in g.layer_ids:
                raise ScenarioError(
                    f"{where}: layer {layer} outside [{g.start_layer}, {g.layer_ids.stop})"
                )
            if layer in g.linear_layer_ids:
                raise ScenarioError(f"{where}: layer {layer} is a linear layer, with no KV cache")
        if forward.cross_layers:
            if forward.encoder_loc is None or len(forward.encoder_loc) != len(forward.loc):
                raise ScenarioError(
                    f"{where}: cross-attention layers need an encoder_loc as long as loc"
                )
            _check_slots(forward.encoder_loc, g.loc_slots, f"{where}.encoder_loc")
        _check_view(forward, where)
        _check_commit(forward, where)
        _check_positions(g, forward, where)
        _check_requests(forward, where)
        _check_unsaved(scenario, forward, where)
        if forward.remap is not None:
            _check_remap(scenario, forward.remap, f"{where}.remap")


def _check_hisparse(g: Geometry) -> None:
    if g.pool in DSA_INDEX_KINDS and g.page_size != 64:
        raise ScenarioError("a DSA pool has 64-token pages")


def _check_dsv4(g: Geometry) -> None:
    """A V4 pool asserts its latent row's widths (DeepSeekV4SingleKVPool.create_buffer)."""
    if g.kind.dsv4 and (g.kv_lora_rank, g.qk_rope_head_dim) != (DSV4_NOPE_DIM, DSV4_ROPE_DIM):
        raise ScenarioError(
            f"a DeepSeek V4 pool's rows are {DSV4_NOPE_DIM} nope + {DSV4_ROPE_DIM} rope"
        )


def _check_nvfp4_page_rows(g: Geometry) -> None:
    """MiniMaxM3Nvfp4KVPool's constructors refuse any other page size or head width; whole pages
    of slots keep its size + page_size rows those of every other kind."""
    if not g.kind.nvfp4_page_rows:
        return
    if g.page_size != NVFP4_PAGE or g.head_dim != NVFP4_HEAD_DIM or g.head_num < 1:
        raise ScenarioError(
            f"a MiniMax M3 NVFP4 pool has {NVFP4_PAGE}-token pages and {NVFP4_HEAD_DIM}-wide heads"
        )
    if g.size % NVFP4_PAGE or g.v_head_dim not in (None, g.head_dim):
        raise ScenarioError("a MiniMax M3 NVFP4 pool holds whole pages and stores V with head_dim")


def _check_sparse(g: Geometry) -> None:
    if not g.kind.sparse_index:
        if g.sparse_layer_ids or g.k_only_layer_ids or g.index_head_dim:
            raise ScenarioError(f"only a MiniMax sparse pool has sparse layers, not {g.pool}")
        return
    if any(not 0 <= i < g.layer_num for i in g.sparse_layer_ids):
        raise ScenarioError(f"sparse layer ids must be in [0, {g.layer_num})")
    if not set(g.k_only_layer_ids) <= set(g.sparse_layer_ids):
        raise ScenarioError("k_only_layer_ids must be sparse layers")
    if g.sparse_layer_ids and g.index_head_dim < 1:
        raise ScenarioError("a MiniMax sparse pool with sparse layers needs index_head_dim >= 1")
    if g.v_head_dim not in (None, g.head_dim):
        raise ScenarioError("a MiniMax sparse pool stores V with head_dim")


def _check_dcp_rank(g: Geometry) -> None:
    if g.dcp_size == 1 and g.dcp_rank == 0:
        return
    if not g.kind.dcp_rank or g.dcp_size < 2 or not 0 <= g.dcp_rank < g.dcp_size:
        raise ScenarioError(
            f"dcp_size {g.dcp_size}, dcp_rank {g.dcp_rank}: a DCP rank is one of 2 or more ranks, "
            "and only a token-major MHA or MLA pool is one (PoolKind.dcp_rank)"
        )
    if g.v_head_dim not in (None, g.head_dim):
        # SGLang's masked_set_kv_buffer_kernel copies head_num * head_dim values of V too.
        raise ScenarioError("a DCP rank's pool stores V with head_dim: v_head_dim must equal it")


def _check_unsaved(scenario: Scenario, forward: Forward, where: str) -> None:
    called = scenario.called_layers(forward)
    if any(layer not in called for layer in forward.unsaved_layers):
        raise ScenarioError(f"{where}.unsaved_layers must be layers the forward calls")
    if set(forward.unsaved_layers) & set(forward.cross_layers):
        raise ScenarioError(f"{where}: a cross-attention layer is not among unsaved_layers")


def _check_positions(g: Geometry, forward: Forward, where: str) -> None:
    if forward.positions is None:
        return
    if g.dcp_size == 1:
        raise ScenarioError(f"{where}.positions: only a DCP rank's write reads positions")
    if len(forward.positions) != len(forward.loc) or any(p < 0 for p in forward.positions):
        raise ScenarioError(f"{where}.positions needs one position of 0 or more per loc entry")
    if forward.narrow is not None or forward.cross_layers or forward.commit_lens is not None:
        raise ScenarioError(
            f"{where}: a DCP rank's forward is neither narrowed, cross-attention nor a draft commit"
        )


def _check_requests(forward: Forward, where: str) -> None:
    for index, span in enumerate(forward.requests or ()):
        if not (isinstance(span.extend, int) and isinstance(span.length, int)):
            raise ScenarioError(f"{where}.requests[{index}]: extend and length are integers")
        if not 1 <= span.extend <= span.length:
            raise ScenarioError(
                f"{where}.requests[{index}]: a request writes 1 token or more, at most its length"
            )
    if not isinstance(forward.extend_lens_on_host, bool):
        raise ScenarioError(f"{where}.extend_lens_on_host: true or false")
    if not forward.extend_lens_on_host and any(
        span.extend != span.length for span in forward.requests or ()
    ):
        # A CP strategy cuts such a batch by seq_lens, which then hold the prefix too: kvh does not
        # model that cut (0.5.23's build_metadata would split more rows than the batch has).
        raise ScenarioError(
            f"{where}: a batch without its extend lengths on the host has requests with no cached "
            "prefix (extend equal to length)"
        )


def _check_commit(forward: Forward, where: str) -> None:
    lens = forward.commit_lens
    if lens is None:
        return
    if not lens or len(forward.loc) % len(lens):
        raise ScenarioError(f"{where}.commit_lens needs rows that split loc evenly")
    width = len(forward.loc) // len(lens)
    if any(not 0 <= n <= width for n in lens):
        raise ScenarioError(f"{where}.commit_lens entries must be in [0, {width}]")
    if forward.narrow is not None or forward.cross_layers:
        raise ScenarioError(f"{where}: a draft commit is neither narrowed nor cross-attention")


def _check_view(forward: Forward, where: str) -> None:
    if forward.loc_storage is not None and (
        not isinstance(forward.loc_storage, int) or forward.loc_storage < 0
    ):
        raise ScenarioError(f"{where}.loc_storage must be a non-negative integer id or null")
    if not isinstance(forward.loc_offset, int) or forward.loc_offset < 0:
        raise ScenarioError(f"{where}.loc_offset must be a non-negative integer")
    if forward.loc_offset and forward.loc_storage is None:
        raise ScenarioError(f"{where}.loc_offset needs a loc_storage to be an offset into")


def _check_remap(scenario: Scenario, remap: Remap, where: str) -> None:
    g = scenario.geometry
    if not g.kind.swa:
        raise ScenarioError(f"{where}: only a SWA pool has a mapping to change")
    if any(not isinstance(pair, list) or len(pair) != 2 for pair in remap.updates):
        raise ScenarioError(f"{where}.updates: each update is a [full_slot, swa_slot] pair")
    _check_slots(
        [pair[0] for pair in remap.updates], g.size + g.page_size, f"{where}.updates full slot"
    )
    _check_slots(
        [pair[1] for pair in remap.updates], g.size_swa + g.page_size, f"{where}.updates swa slot"
    )


_SLOT_TYPES = {int, bool}  # what isinstance(slot, int) accepts, as the scan below does


def _check_slots(slots: list[int], rows: int, where: str) -> None:
    # The common case in C (a SUT worker validates a scenario per check, a mapping of up to 2^17
    # slots); the slow scan only to name the first bad slot.
    if not slots or (set(map(type, slots)) <= _SLOT_TYPES and 0 <= min(slots) <= max(slots) < rows):
        return
    bad = [slot for slot in slots if not isinstance(slot, int) or not 0 <= slot < rows]
    if bad:
        raise ScenarioError(f"{where}: slot id {bad[0]!r} outside [0, {rows})")
