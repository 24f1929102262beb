"""The oracles and policies, declared as data: what is compared, and what is deliberately not.

Each oracle takes (scenario, baseline, candidate, expected writes) and returns findings. The
bytes oracles run only when both sides completed; the exception oracle judges the rest.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from harness.execute import CANARY, Execution
from harness.expectations import PADDING_SINK, Expected
from harness.findings import Finding, hex_window, locate
from pools.fp4.reference import dequantize as fp4_dequantize
from pools.fp4.reference import error_bound as fp4_error_bound
from scenarios.model import Scenario

Check = Callable[[Scenario, Execution, Execution, Expected], list[Finding]]


@dataclass(frozen=True)
class Oracle:
    name: str
    description: str
    check: Check
    # Judges a run on its own (never reads the baseline), so it also checks the baseline itself.
    alone: bool = False


@dataclass(frozen=True)
class Policy:
    name: str
    description: str


POLICIES = (
    Policy("padding-sink", f"slot {PADDING_SINK} (page 0) is the padding sink: padded and unmapped "
                           "tokens land there and some writers skip it, so it is not compared"),
    Policy("bitwise", "bytes are compared exactly; no tolerance is declared for any builtin engine "
                      "(the fp4_bound oracle checks FP4 values against the input, not the baseline)"),
)


def _exception(scenario: Scenario, baseline: Execution, candidate: Execution,
               expected: Expected) -> list[Finding]:
    if (baseline.error is None) == (candidate.error is None):
        return []
    if candidate.error is not None:
        return [Finding("exception", f"raised where the baseline did not: {candidate.error}",
                        written_by=candidate.error_at)]
    return [Finding("exception", f"did not raise where the baseline did: {baseline.error}",
                    written_by=baseline.error_at)]


def _first_difference(scenario: Scenario, name: str, slots: list[int], want: torch.Tensor,
                      got: torch.Tensor, oracle: str, message: str,
                      expected: Expected) -> list[Finding]:
    differs = (want != got).any(dim=1)
    if not bool(differs.any()):
        return []
    row = int(differs.nonzero()[0])
    offset = int((want[row] != got[row]).nonzero()[0])
    slot = slots[row]
    layer, sub_pool, head = locate(scenario, name, offset)
    writer = expected[name].get(slot)
    return [Finding(oracle, message, buffer=name, layer=layer, sub_pool=sub_pool or None,
                    slot=slot, head=head, byte_offset=offset,
                    written_by=writer and f"forward {writer.forward}, token {writer.token}",
                    expected=hex_window(want[row], offset), actual=hex_window(got[row], offset),
                    mismatched_rows=int(differs.sum()))]


def _shapes(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, want in baseline.buffers.items():
        got = candidate.buffers.get(name)
        if got is None or got.shape != want.shape:
            findings.append(Finding("shape", f"buffer shape {None if got is None else tuple(got.shape)}"
                                    f" != baseline {tuple(want.shape)}", buffer=name))
    return findings


def _written_bytes(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, writers in expected.items():
        want, got = baseline.buffers.get(name), candidate.buffers.get(name)
        if want is None or got is None or want.shape != got.shape or not writers:
            continue
        index = expected.slot_index(name)
        findings += _first_difference(scenario, name, expected.slots(name), want[index], got[index],
                                      "bytes", "written bytes differ from the baseline", expected)
    return findings


def _untouched(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, got in candidate.buffers.items():
        if name not in expected:
            continue
        keep = expected.untouched(name, got.shape[0])
        rows = got[keep]
        if bool((rows == CANARY).all()):  # the common case: no per-slot bookkeeping
            continue
        slots = keep.nonzero().flatten().tolist()
        canary = torch.full_like(rows, CANARY)
        findings += _first_difference(scenario, name, slots, canary, rows, "untouched",
                                      "a slot that no token writes was changed", expected)
    return findings


def _caller_tensors(scenario, baseline, candidate, expected) -> list[Finding]:
    findings = []
    for name, want in baseline.caller.items():
        got = candidate.caller.get(name)
        if got is None or got.shape != want.shape or not torch.equal(got, want):
            if got is None:
                mutated = "missing"
            elif got.shape != want.shape:
                mutated = f"shape {tuple(got.shape)} != {tuple(want.shape)}"
            else:
                mutated = f"{int((got != want).sum())} bytes differ"
            findings.append(Finding("caller_tensors", f"caller tensor {name} after the call differs "
                                    f"from the baseline's ({mutated}); in-place mutation must match",
                                    buffer=name))
            break
    return findings


def _fp4_within_bound(scenario, baseline, candidate, expected) -> list[Finding]:
    """Dequantised FP4 bytes are within the e2m1 rounding bound of the input: catches a quantiser
    that is wrong the same way in the reference and the candidate."""
    g = scenario.geometry
    if not g.is_fp4:
        return []
    parts = ("kv",) if g.is_mla else ("k", "v")
    for layer_id in range(g.layer_num):
        for part in parts:
            name = f"L{layer_id}.{part}"
            writers = expected.get(name)
            data, scales = candidate.buffers.get(name), candidate.buffers.get(f"{name}_scale")
            if not writers or data is None or scales is None:
                continue
            slots = expected.slots(name)
            want = expected.fp4_inputs(name, part, layer_id)
            index = expected.slot_index(name)
            got = fp4_dequantize(data[index], scales[index])
            bad = ~((got - want).abs() <= fp4_error_bound(want))
            if bool(bad.any()):
                row, element = (int(i) for i in bad.nonzero()[0])
                writer = writers[slots[row]]
                _, sub_pool, head = locate(scenario, name, element // 2)
                return [Finding("fp4_bound", f"dequantised FP4 value {float(got[row, element]):g} is "
                                f"not within the e2m1 bound of the input {float(want[row, element]):g}",
                                buffer=name, layer=layer_id, slot=slots[row], head=head,
                                byte_offset=element // 2, mismatched_rows=int(bad.any(1).sum()),
                                written_by=f"forward {writer.forward}, token {writer.token}")]
    return []


ORACLES: tuple[Oracle, ...] = (
    Oracle("exception", "an exception on one side only", _exception),
    Oracle("shape", "every buffer has the baseline's shape", _shapes),
    Oracle("bytes", "bytes of every written slot equal the baseline's, bitwise", _written_bytes),
    Oracle("untouched", "every slot no token writes keeps its canary bytes", _untouched, alone=True),
    Oracle("caller_tensors", "the caller's k/v after the call equal the baseline's", _caller_tensors),
    Oracle("fp4_bound", "FP4 pools only: dequantised data and block scales are within the e2m1 "
           "rounding bound of the (scaled) input, independently of the baseline", _fp4_within_bound,
           alone=True),
)


def self_check(scenario: Scenario, execution: Execution, expected: Expected) -> list[Finding]:
    """The oracles that need no baseline, on one run: the baseline must obey them too."""
    if execution.error is not None:
        return []
    return [finding for oracle in ORACLES if oracle.alone
            for finding in oracle.check(scenario, execution, execution, expected)]


def judge(scenario: Scenario, baseline: Execution, candidate: Execution,
          expected: Expected) -> list[Finding]:
    findings = ORACLES[0].check(scenario, baseline, candidate, expected)
    if findings or candidate.error is not None:
        return findings
    for oracle in ORACLES[1:]:
        findings += oracle.check(scenario, baseline, candidate, expected)
    return findings
