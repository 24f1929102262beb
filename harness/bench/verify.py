"""Verification of a timed cell: the bytes of its last timed write, judged as `kvh run` judges.

The verdict is harness/compare/verdict.py's: the candidate's era's baseline (the baseline pools
through that era's call site), the ground truth and the declared divergences. A cell whose write
differs becomes a finding and reports no number; a cell whose call raised, or that a SUT limit
removes, is an error and reports none either, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from backends.registry import backend_named
from harness.compare.findings import Finding
from harness.compare.snapshot import Execution
from harness.compare.verdict import judge_candidate
from harness.run.baselines import run_baselines
from harness.sut.probe.capabilities import Capabilities
from reports.outcome import Outcome
from scenarios.model import Scenario


@dataclass
class Verdict:
    outcome: Outcome  # MEASURED, FINDING or ERROR
    message: str = ""
    findings: list[Finding] = field(default_factory=list)


class Baseline:
    """The baselines of one scenario for the eras of the cells that share it, computed once."""

    def __init__(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        timeout_s: Optional[float],
        eras: Optional[Iterable[str]] = None,
    ):
        entry = backend_named(backend)
        self.baselines = run_baselines(scenario, entry, mode, eras or entry.eras, timeout_s)

    def known(self, era: str) -> Optional[Execution]:
        """The era's baseline run: a worker sends as bytes only the buffers that differ from it."""
        return self.baselines.runs.get(era)

    def judge(
        self, candidate: Execution, era: str, capabilities: Optional[Capabilities] = None
    ) -> Verdict:
        run = self.baselines.runs.get(era)
        if run is None:
            raise ValueError(f"no baseline for era {era!r}: pass it to Baseline(eras=...)")
        if run.error is not None:
            return Verdict(Outcome.ERROR, f"the baseline raised: {run.error}")
        verdict = judge_candidate(self.baselines, era, candidate, capabilities)
        if candidate.error is not None:
            return Verdict(
                Outcome.ERROR, f"raised while timing: {candidate.error}", verdict.findings
            )
        if verdict.outcome is Outcome.FINDING:
            return Verdict(Outcome.FINDING, verdict.findings[0].headline(), verdict.findings)
        return Verdict(Outcome.MEASURED)
