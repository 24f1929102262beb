"""The baseline pools through each era's call site on one scenario (the runs every verdict is
decided against), and `decide`: a candidate's verdict with what this machine or driver cannot do
(harness/sut/probe/limits.py) turned into a skip.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Optional

from backends.registry import Backend
from harness.compare.expectations import expected_writes
from harness.compare.snapshot import Execution
from harness.compare.verdict import Baselines, Verdict, divergences_of, judge_candidate
from harness.plan.baseline import baseline_for
from harness.plan.candidate import Candidate
from harness.run.execute import execute
from harness.sut.probe.limits import skip_reason
from pools.builtin.layouts.kinds import served_eras
from reports.outcome import Outcome
from scenarios.model import Scenario


def run_baselines(
    scenario: Scenario,
    backend: Backend,
    mode: str,
    eras: Iterable[str],
    timeout_s: Optional[float],
    judge_caller: bool = True,
) -> Baselines:
    """The baseline through the ground truth's call site and each of `eras`' (backend.eras order).
    `judge_caller=False` leaves the caller's tensors out (a CP rank's k/v are its shares)."""
    served = served_eras(scenario.geometry.pool, backend.eras)
    wanted = set(eras) | {served[0]}
    runs = {}
    for era in (era for era in served if era in wanted):
        run = execute(baseline_for(backend, mode, era), scenario, timeout_s, backend)
        runs[era] = run if judge_caller else replace(run, caller={})
    return Baselines(
        scenario, mode, served[0], runs, expected_writes(scenario), divergences_of(backend)
    )


def decide(baselines: Baselines, candidate: Candidate, execution: Execution) -> Verdict:
    """judge_candidate, then what this machine or driver cannot do (harness/sut/probe/limits.py): a
    finding that explains is a skip."""
    verdict = judge_candidate(
        baselines,
        candidate.era,
        execution,
        candidate.capabilities,
        call_site_changed=bool(candidate.census_evidence),
    )
    if verdict.outcome is Outcome.FINDING:
        reason = skip_reason(baselines.scenario, candidate, verdict.findings, execution)
        if reason is not None:
            return Verdict(Outcome.SKIPPED, verdict.findings, skip_reason=reason)
    return verdict
