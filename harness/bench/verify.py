"""Verification of a timed cell: the bytes of its last timed write against the reference.

The reference is the run's baseline (the backend's oldest call site on reference pools, on
CPU), judged by the same oracles as `kvh run`. A cell whose write differs becomes a finding
and reports no number; a cell whose call raised is an error and reports none either.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from backends.registry import backend_named
from harness.execute import Execution, execute
from harness.expectations import expected_writes
from harness.findings import Finding
from harness.oracles import judge
from harness.plan import baseline_for
from scenarios.model import Scenario


@dataclass
class Verdict:
    outcome: str                      # measured | finding | error
    message: str = ""
    findings: list[Finding] = field(default_factory=list)


class Reference:
    """The baseline's execution of one scenario, computed once for every cell that shares it."""

    def __init__(self, scenario: Scenario, backend: str, mode: str, timeout_s: Optional[float]):
        self.scenario = scenario
        self.execution = execute(baseline_for(backend_named(backend), mode), scenario, timeout_s)
        self.expected = expected_writes(scenario)

    def judge(self, candidate: Execution) -> Verdict:
        if self.execution.error is not None:
            return Verdict("error", f"the reference raised: {self.execution.error}")
        findings = judge(self.scenario, self.execution, candidate, self.expected)
        if candidate.error is not None:
            return Verdict("error", f"raised while timing: {candidate.error}", findings)
        if findings:
            return Verdict("finding", findings[0].headline(), findings)
        return Verdict("measured")
