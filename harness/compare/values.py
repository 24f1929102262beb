"""The value model and the value oracle: what every written slot must hold, from the scenario alone.

A third implementation beside the judge (pools/judge) and the engines: torch's own CPU ops on the
scenario's regenerated tensors. For each slot a correct write leaves behind (the last writer
wins, slot 0 excluded; harness.compare.expectations.Expected says which (forward, token) that is),
the model takes that token's caller values, divides them in their own dtype by the layer's scale
(`clone().div_(scale)`, only when a cast follows and the call site passes a scale), casts them to
the pool dtype (`.to`) and reads the bytes (`.view(torch.uint8)`). A bug that the baseline and a
candidate share, in their division, casts or placement, shows here and nowhere else.

Scope, as data (each backend's `value_scope`, collected in VALUE_SCOPE): the canonical calls of
`plain` and `plain_mla`, on every pool kind except FP4, whose bytes the fp4_bound oracle judges
against the input. The oracles see every
layout's buffers as one row per slot (pools/kinds/layer_buffers.py), so a slot's row is the
token's (heads, dim) values in order, whatever the layout.
"""

from __future__ import annotations

import torch

from backends.entry import ValueScope
from backends.registry import BACKENDS
from harness.compare.expectations import Expected
from harness.compare.findings import Finding, first_difference
from harness.compare.snapshot import Execution
from pools.dtypes import dtype_spec
from pools.kinds.registry import KINDS
from scenarios.materialize import qsa_compressed_dtype, scale_object, token_tensors
from scenarios.model import Scenario
from scenarios.nvfp4_rows import quantised_rows

ORACLE = "value"


# backend -> where the value oracle judges it: each backend declares its own (backends/*.py
# value_scope); here they are only collected.
VALUE_SCOPE: dict[str, ValueScope] = {
    name: entry.value_scope for name, entry in BACKENDS.items() if entry.value_scope is not None
}
# pool kind -> why the value oracle leaves its bytes to another judge (each kind's record says).
OUT_OF_SCOPE: dict[str, str] = {
    name: kind.values_judged_elsewhere
    for name, kind in KINDS.items()
    if kind.values_judged_elsewhere
}


def in_scope(scenario: Scenario, backend: str) -> bool:
    scope = VALUE_SCOPE.get(backend)
    return scope is not None and scenario.geometry.pool in scope.pools


def value_findings(
    scenario: Scenario, execution: Execution, expected: Expected, backend: str
) -> list[Finding]:
    """A Finding for the first written slot whose bytes differ from the model, or []: also when
    the backend or pool kind is out of scope or the execution raised."""
    if execution.error is not None or not in_scope(scenario, backend):
        return []
    # Built on first need; then the rows come from expected's memo.
    value_models: list[_ValueModel] = []
    scaled = VALUE_SCOPE[backend].scaled

    def rows(name: str, slots: list[int]) -> torch.Tensor:
        if not value_models:
            value_models.append(_ValueModel(scenario, scaled))
        return torch.stack([value_models[0].row(name, expected[name][slot]) for slot in slots])

    for name in expected:
        slots = expected.slots(name)
        if not slots:
            continue
        want = expected.memo(
            (ORACLE, name, scaled), lambda name=name, slots=slots: rows(name, slots)
        )
        got = execution.buffers.get(name)
        if got is None or got.shape[1:] != want.shape[1:] or got.shape[0] <= slots[-1]:
            return [
                Finding(
                    ORACLE,
                    f"buffer {name} has no (slots, {want.shape[1]} bytes) rows to "
                    f"check: {None if got is None else tuple(got.shape)}",
                    buffer=name,
                )
            ]
        finding = next(
            iter(
                first_difference(
                    scenario,
                    name,
                    slots,
                    want,
                    got[expected.slot_index(name)],
                    ORACLE,
                    "written bytes differ from the value the scenario implies (divide in the "
                    "input dtype, cast to the pool dtype)",
                    expected,
                )
            ),
            None,
        )
        if finding is not None:
            return [finding]
    return []


# The layer scale that divides each MHA part: a MiniMax sparse layer's index k and v take the
# index scales, which its model hands on from the layer's k and v scales.
SCALE_OF_PART = {"k": "k", "v": "v", "idx_k": "k", "idx_v": "v"}


class _ValueModel:
    """Expected row bytes per (buffer, writer), the caller's tensors regenerated once per
    (forward, layer)."""

    def __init__(self, scenario: Scenario, scaled: bool = True):
        self.scenario = scenario
        self.pool_dtype = dtype_spec(scenario.geometry.dtype).dtype
        self.scales = {
            "k": scale_object(scenario.k_scale, "cpu") if scaled else None,
            "v": scale_object(scenario.v_scale, "cpu") if scaled else None,
        }
        self._rows: dict[tuple[int, int], dict[str, torch.Tensor]] = {}

    def row(self, name: str, writer) -> torch.Tensor:
        layer_id, part = int(name[1:].split(".")[0]), name.split(".", 1)[1]
        key = (writer.forward, layer_id)
        if key not in self._rows:
            self._rows[key] = self._parts(writer.forward, layer_id)
        return self._rows[key][part][writer.token]

    def _parts(self, forward: int, layer_id: int) -> dict[str, torch.Tensor]:
        tensors = token_tensors(self.scenario, forward, layer_id, "cpu")
        if self.scenario.geometry.kind.nvfp4_page_rows:
            return _nvfp4_parts(tensors)
        if self.scenario.geometry.kind.latent:
            nope, rope = tensors["k"], tensors["k_rope"]
            parts = {"nope": self._cast(nope), "kv": self._cast(nope)}
            if rope is not None:
                parts["rope"] = self._cast(rope)
                parts["kv"] = torch.cat([parts["kv"], parts["rope"]], dim=-1)
            rows = {name: _row_bytes(values) for name, values in parts.items()}
            if tensors.get("index_k") is not None:  # a DSA layer's keys, then their scales
                rows["index_k"] = torch.cat(
                    [_row_bytes(tensors["index_k"]), _row_bytes(tensors["index_k_scale"])], dim=1
                )
            return rows
        rows = {}
        for part, scale in SCALE_OF_PART.items():
            if tensors.get(part) is None:
                continue
            values = tensors[part].clone()
            # The pool divides only on the way to a cast.
            if values.dtype != self.pool_dtype and self.scales[scale] is not None:
                values.div_(self.scales[scale])
            rows[part] = _row_bytes(self._cast(values))
        if tensors.get("qsa_state") is not None:
            rows.update(self._qsa_parts(forward, tensors))
        return rows

    def _qsa_parts(self, forward: int, tensors: dict) -> dict[str, torch.Tensor]:
        """A QSA layer's ring keys (bf16 always), compressed keys (the indexer's dtype) and the
        ring's positions: each token's position, its slot, three times (the door's 1-D form)."""
        g, step = self.scenario.geometry, self.scenario.forwards[forward]
        positions = torch.tensor(step.loc[: step.tokens], dtype=torch.int64)
        return {
            "qsa_state": _row_bytes(tensors["qsa_state"].to(torch.bfloat16)),
            "qsa_ck": _row_bytes(tensors["qsa_ck"].to(qsa_compressed_dtype(g))),
            "qsa_rope": _row_bytes(positions[:, None].expand(-1, 3)),
        }

    def _cast(self, values: torch.Tensor) -> torch.Tensor:
        return values.to(self.pool_dtype) if values.dtype != self.pool_dtype else values


def _nvfp4_parts(tensors: dict) -> dict[str, torch.Tensor]:
    """A MiniMax M3 NVFP4 slot's rows: the quantised bytes its caller hands (scenarios.nvfp4_rows)
    stored as they come, [K, K scale, V, V scale] in the main pool, [K, K scale] in the index."""

    def row(*parts: str) -> torch.Tensor:
        rows = [quantised_rows(tensors[part]) for part in parts]
        return torch.cat([_row_bytes(half) for pair in rows for half in pair], dim=1)

    return {"main": row("k", "v"), "index": row("idx_k")}


def _row_bytes(values: torch.Tensor) -> torch.Tensor:
    """(tokens, ...) values -> (tokens, bytes) uint8, each token's row in C order."""
    return values.contiguous().view(torch.uint8).reshape(values.shape[0], -1)
