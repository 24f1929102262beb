"""The oracles and policies, declared as data: what is compared, and what is deliberately not.

Each oracle takes (scenario, baseline, candidate, expected writes) and returns findings. The
bytes oracles run when both sides completed; the exception oracle judges a one-sided raise or two
different ones, and two runs that raised alike compare the bytes written before the raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from harness.compare.byte_compare import (
    bytes_equal,
    canary_outside,
    off_canary,
    written_rows_equal,
)
from harness.compare.expectations import PADDING_SINK, Expected
from harness.compare.findings import Finding, first_difference
from harness.compare.fp4_bound import fp4_bound_findings
from harness.compare.snapshot import CANARY, Execution
from harness.compare.values import value_findings
from scenarios.model import Scenario
from scenarios.slots import write_slots

Check = Callable[[Scenario, Execution, Execution, Expected], list[Finding]]


@dataclass(frozen=True)
class Oracle:
    name: str
    description: str
    check: Check
    # Judges a run on its own (never reads the baseline), so it also checks the baseline itself.
    alone: bool = False
    # Reads nothing but the two runs' buffers: it has nothing to say when they are identical.
    buffers_only: bool = False
    when: str = "completed"  # one of WHEN: which pairs of runs it speaks for


# ALWAYS speaks first, and alone when it finds anything; BOTH_RAISED only when both runs raised
# alike; COMPLETED only when neither raised.
ALWAYS, BOTH_RAISED, COMPLETED = "always", "both raised", "completed"
WHEN = (ALWAYS, BOTH_RAISED, COMPLETED)


# Exceptions that mean the same thing although their class differs, declared as data: SGLang's
# pools let torch raise a RuntimeError on a loc/rows length mismatch, where the builtin engines
# raise IndexError. (class, message pattern) -> the class it counts as.
EXCEPTION_ALIASES: tuple[tuple[str, str, str], ...] = (
    ("RuntimeError", r"shape mismatch|cannot be broadcast|must match the size", "IndexError"),
)


def error_kind(execution: Execution) -> str:
    """The exception's class, or the class a declared alias makes it count as."""
    error = execution.error or ""
    name = execution.error_type or error.split(":", 1)[0].strip()
    for class_name, pattern, counts_as in EXCEPTION_ALIASES:
        if name == class_name and re.search(pattern, error):
            return counts_as
    return name


def error_place(execution: Execution) -> tuple:
    """(stage, forward, layer, door); a worker's execution may carry only the place as text."""
    place = execution.error_place
    if place is None:
        return (execution.error_at,)
    return (place.stage, place.forward, place.layer, place.door)


def raised_alike(baseline: Execution, candidate: Execution) -> bool:
    return (
        baseline.error is not None
        and candidate.error is not None
        and error_kind(baseline) == error_kind(candidate)
        and error_place(baseline) == error_place(candidate)
    )


def _where(execution: Execution) -> dict:
    place = execution.error_place
    if place is None:
        return {"written_by": execution.error_at}
    return {
        "written_by": execution.error_at,
        "forward": place.forward,
        "layer": place.layer,
        "door": place.door or None,
    }


def _said(execution: Execution) -> str:
    place = execution.error_place
    door = f" in {place.door}" if place is not None and place.door else ""
    return f"{execution.error} at {execution.error_at}{door}"


def _exception(
    scenario: Scenario, baseline: Execution, candidate: Execution, expected: Expected
) -> list[Finding]:
    if baseline.error is None and candidate.error is None:
        return []
    if baseline.error is None:
        return [
            Finding(
                "exception",
                f"raised where the baseline did not: {candidate.error}",
                **_where(candidate),
            )
        ]
    if candidate.error is None:
        return [
            Finding(
                "exception",
                f"did not raise where the baseline did: {baseline.error}",
                **_where(baseline),
            )
        ]
    if raised_alike(baseline, candidate):
        return []
    return [
        Finding(
            "exception",
            f"raised {_said(candidate)} where the baseline raised {_said(baseline)}",
            **_where(candidate),
        )
    ]


def _shapes(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, want in baseline.buffers.items():
        got = candidate.buffers.get(name)
        if got is None or got.shape != want.shape:
            findings.append(
                Finding(
                    "shape",
                    f"buffer shape {None if got is None else tuple(got.shape)}"
                    f" != baseline {tuple(want.shape)}",
                    buffer=name,
                )
            )
    return findings


def _reader_dtypes(scenario, baseline, candidate, expected) -> list[Finding]:
    """Bytes alike can still be read as another dtype (the raw uint8 storage of an fp8 cache):
    an attention backend reads the cache through the reader, so its dtype is compared too."""
    return [
        Finding("reader_dtype", f"buffer reader returns {got} != baseline {want}", buffer=name)
        for name, want in baseline.reader_dtypes.items()
        if (got := candidate.reader_dtypes.get(name)) is not None and got != want
    ]


def _written_bytes(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, writers in expected.items():
        want, got = baseline.buffers.get(name), candidate.buffers.get(name)
        if want is None or got is None or want.shape != got.shape or not writers:
            continue
        index = expected.slot_index(name)
        # The common case: every written row equals the baseline's. Only the written rows are
        # compared (what first_difference would read); a row no token writes is the untouched
        # oracle's, so a pool's size costs nothing here.
        if written_rows_equal(want, got, index):
            continue
        findings += first_difference(
            scenario,
            name,
            expected.slots(name),
            want[index],
            got[index],
            "bytes",
            "written bytes differ from the baseline",
            expected,
        )
    return findings


def _untouched(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, got in candidate.buffers.items():
        if name not in expected:
            continue
        # The common case, one comparison per run of unwritten rows, nothing copied: nothing
        # outside the writes changed (where the runs are many, one masked pass decides).
        if canary_outside(got, expected.slots(name)):
            continue
        keep = expected.untouched(name, got.shape[0])
        if not bool((off_canary(got) & keep).any()):
            continue
        rows = got[keep]
        slots = keep.nonzero().flatten().tolist()
        canary = torch.full_like(rows, CANARY)
        findings += first_difference(
            scenario,
            name,
            slots,
            canary,
            rows,
            "untouched",
            "a slot that no token writes was changed",
            expected,
        )
    return findings


def _reserved_slot(scenario, baseline, candidate, expected) -> list[Finding]:
    """Where the baseline's store skipped the reserved slot (its policy: SGLang's
    reserved_skip_index), the candidate's slot 0 still holds the canary: no padding row, NaN or
    not, was written there. Where the policy writes slot 0, its bytes stay don't-care (duplicate
    padding rows race there)."""
    findings = []
    for name in sorted(baseline.kept_sinks):
        got, want = candidate.buffers.get(name), baseline.buffers.get(name)
        if got is None or not got.shape[0] or want is None or not want.shape[0]:
            continue
        if bool((want[PADDING_SINK] != CANARY).any()):  # another of its doors wrote the slot
            continue
        changed = int((got[PADDING_SINK] != CANARY).sum())
        if not changed:
            continue
        layer = int(name.split(".", 1)[0][1:])
        # The first forward whose tokens point this layer at the slot (None: no token does).
        forward = next(
            (
                index
                for index, step in enumerate(scenario.forwards)
                if layer in scenario.layers_of(step)
                and PADDING_SINK in write_slots(scenario, step, layer)
            ),
            None,
        )
        findings.append(
            Finding(
                "reserved_slot",
                f"slot {PADDING_SINK}, the reserved slot the store's policy skips, was written "
                f"({changed} bytes off the canary): padding rows must not reach it",
                buffer=name,
                layer=layer,
                slot=PADDING_SINK,
                forward=forward,
            )
        )
    return findings


def _caller_place(name: str) -> tuple[Optional[int], Optional[int]]:
    """(forward, layer) of a caller tensor's name, "f0.L1.k" (harness/run/execute.py
    caller_bytes)."""
    match = re.fullmatch(r"f(\d+)\.L(\d+)\..*", name)
    return (int(match[1]), int(match[2])) if match else (None, None)


def _caller_tensors(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, want in baseline.caller.items():
        got = candidate.caller.get(name)
        if got is None or got.shape != want.shape or not bytes_equal(got, want):
            if got is None:
                mutated = "missing"
            elif got.shape != want.shape:
                mutated = f"shape {tuple(got.shape)} != {tuple(want.shape)}"
            else:
                mutated = f"{int((got != want).sum())} bytes differ"
            forward, layer = _caller_place(name)
            findings.append(
                Finding(
                    "caller_tensors",
                    f"caller tensor {name} after the call differs "
                    f"from the baseline's ({mutated}); in-place mutation must match",
                    buffer=name,
                    forward=forward,
                    layer=layer,
                )
            )
            break
    return findings


def _raising_layer(execution: Execution) -> Optional[int]:
    place = execution.error_place
    return place.layer if place is not None else None


def _before_the_raise(scenario, baseline, candidate, expected) -> list[Finding]:
    """Both raised alike: every row (the sink excepted) that the calls completed before the raise
    wrote must be the baseline's, and so must the caller's tensors they handed back. The raising
    call's own layer is not compared: a store may raise part-way through its rows (a per-token
    loop) or before the first (torch's index_put), and neither is the API's promise."""
    findings = []
    skipped = _raising_layer(candidate)
    for name, want in baseline.buffers.items():
        got = candidate.buffers.get(name)
        if got is None or got.shape != want.shape or want.shape[0] <= PADDING_SINK + 1:
            continue
        if skipped is not None and name.startswith(f"L{skipped}."):
            continue
        slots = list(range(PADDING_SINK + 1, want.shape[0]))
        findings += first_difference(
            scenario,
            name,
            slots,
            want[PADDING_SINK + 1 :],
            got[PADDING_SINK + 1 :],
            "bytes",
            "bytes written before the raise differ from the baseline's",
            expected,
        )
    return findings + _caller_tensors(scenario, baseline, candidate, expected)


def _values(scenario, baseline, candidate, expected) -> list[Finding]:
    """Every written slot holds what the scenario implies (harness/compare/values.py): catches a
    fault
    that the baseline and the candidate share."""
    return value_findings(scenario, candidate, expected, candidate.backend)


ORACLES: tuple[Oracle, ...] = (
    Oracle(
        "exception",
        "an exception on one side only, or of another class (EXCEPTION_ALIASES) "
        "or at another place (stage, forward, layer, door) than the baseline's",
        _exception,
        when=ALWAYS,
    ),
    Oracle(
        "before_the_raise",
        "both raised alike: the rows (the sink excepted) and caller tensors of the calls that "
        "completed before the raise equal the baseline's; its findings are bytes and "
        "caller_tensors findings",
        _before_the_raise,
        when=BOTH_RAISED,
    ),
    Oracle("shape", "every buffer has the baseline's shape", _shapes, buffers_only=True),
    Oracle(
        "reader_dtype",
        "every buffer read through SGLang's K/V reader (get_key_buffer, get_value_buffer) is "
        "returned in the baseline's dtype",
        _reader_dtypes,
    ),
    Oracle(
        "bytes",
        "bytes of every written slot equal the baseline's, bitwise",
        _written_bytes,
        buffers_only=True,
    ),
    Oracle(
        "untouched", "every slot no token writes keeps its canary bytes", _untouched, alone=True
    ),
    Oracle(
        "reserved_slot",
        "where the baseline's store skips the reserved slot 0 (SGLang's reserved_skip_index: "
        "the MLA store with a rope part), the candidate's slot 0 keeps its canary bytes",
        _reserved_slot,
    ),
    Oracle(
        "caller_tensors", "the caller's k/v after the call equal the baseline's", _caller_tensors
    ),
    Oracle(
        "value",
        "written slots hold the scenario's values divided and cast by torch's own CPU "
        "ops, independently of the baseline (plain and plain_mla; harness/compare/values.py "
        "VALUE_SCOPE)",
        _values,
        alone=True,
    ),
    Oracle(
        "fp4_bound",
        "FP4 pools only: dequantised data and block scales are within the e2m1 "
        "rounding bound of the (scaled) input, independently of the baseline",
        fp4_bound_findings,
        alone=True,
    ),
)


def self_check(scenario: Scenario, execution: Execution, expected: Expected) -> list[Finding]:
    """The oracles that need no baseline, on one run: the baseline must obey them too."""
    if execution.error is not None:
        return []
    return [
        finding
        for oracle in ORACLES
        if oracle.alone
        for finding in oracle.check(scenario, execution, execution, expected)
    ]
