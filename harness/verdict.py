"""The one place that decides an outcome: the era table and every candidate's verdict.

For one scenario and one cell (backend, mode), the baseline pools (harness.plan.baseline_module)
run through each era's call site. The oldest era's run is the ground truth G; era E's run is R_E.

Era table (the model's own claim): R_E is compared with G by the oracles. No difference: PASS
(BOTH_RAISED when both raised alike). Every difference covered by a declared divergence of era E
that applies: KNOWN_DIVERGENCE naming the divergences. Anything else: FINDING against the model.

Candidate of era E: compared with R_E. No finding: KNOWN_DIVERGENCE when R_E differs from G by
declared divergences, else BOTH_RAISED when it raised alike with R_E, else PASS. Findings: a
divergence declared for a capability the candidate's SUT probes with that covers them makes it a
KNOWN_DIVERGENCE; when every divergence between R_E and G is `fixed-later` and the candidate
equals G, it already has the fix and is judged against G (PASS, or BOTH_RAISED); otherwise it is
a FINDING. A declared SUT limit that explains the finding makes it SKIPPED (harness/sut/limits.py).
docs/verdict.md says the same for readers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional

from backends.divergences import DIVERGENCES, FIXED_LATER, KnownDivergence
from backends.registry import Backend
from harness.byte_compare import buffers_equal
from harness.candidate import Candidate
from harness.execute import Execution, execute
from harness.expectations import Expected, expected_writes
from harness.findings import Finding
from harness.oracles import judge, self_check
from harness.plan import baseline_for
from harness.sut.capabilities import Capabilities
from harness.sut.limits import skip_reason
from reports.outcome import Outcome
from scenarios.model import Scenario


@dataclass
class Verdict:
    outcome: Outcome
    findings: list[Finding] = field(default_factory=list)
    divergences: tuple[KnownDivergence, ...] = ()
    skip_reason: str = ""

    @property
    def divergence(self) -> Optional[KnownDivergence]:
        return self.divergences[0] if self.divergences else None


def divergences_of(backend: Backend) -> tuple[KnownDivergence, ...]:
    """The divergences that can hold in a backend's cells: the shared ones and its own."""
    return (*DIVERGENCES, *getattr(backend, "divergences", ()))


def _covering(
    scenario: Scenario, mode: str, findings: list[Finding], divergences: Iterable[KnownDivergence]
) -> Optional[tuple[KnownDivergence, ...]]:
    """The divergences that together explain every finding (each finding covered by one that
    applies), or None when some finding is covered by none."""
    applicable = [d for d in divergences if d.applies(scenario, mode)]
    used: dict[str, KnownDivergence] = {}
    for finding in findings:
        match = next((d for d in applicable if d.covers(scenario, finding)), None)
        if match is None:
            return None
        used.setdefault(match.name, match)
    return tuple(used.values())


@dataclass
class Baselines:
    """The baseline pools through each era's call site on one scenario, and the era table."""

    scenario: Scenario
    mode: str
    ground: str  # the oldest era: its run is the ground truth
    runs: dict[str, Execution]
    expected: Expected
    divergences: tuple[KnownDivergence, ...]
    eras: dict[str, Verdict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        truth = self.truth
        # Each era's run compared with the ground truth's once, for its self-check and its row.
        self.identical = {
            era: era != self.ground and _identical(truth, run) for era, run in self.runs.items()
        }
        self.alone = {self.ground: self_check(self.scenario, truth, self.expected)}
        for era, run in self.runs.items():
            if era != self.ground:
                self.alone[era] = _self_check(
                    self, truth, self.alone[self.ground], run, self.identical[era]
                )
        self.eras = {era: self._era_verdict(era) for era in self.runs}

    @property
    def truth(self) -> Execution:
        return self.runs[self.ground]

    def _era_verdict(self, era: str) -> Verdict:
        run, own = self.runs[era], self.alone[era]
        if era == self.ground:
            raised = Outcome.BOTH_RAISED if run.error is not None else Outcome.PASS
            return Verdict(Outcome.FINDING, own) if own else Verdict(raised)
        findings = judge(
            self.scenario, self.truth, run, self.expected, alone=[], identical=self.identical[era]
        )
        if own:
            return Verdict(Outcome.FINDING, own + findings)
        if not findings:
            return Verdict(Outcome.BOTH_RAISED if run.error is not None else Outcome.PASS)
        era_divergences = [d for d in self.divergences if era in d.eras and not d.capability]
        covering = _covering(self.scenario, self.mode, findings, era_divergences)
        if covering is None:
            return Verdict(Outcome.FINDING, findings)
        return Verdict(Outcome.KNOWN_DIVERGENCE, findings, covering)


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
    wanted = set(eras) | {backend.eras[0]}
    runs = {}
    for era in (era for era in backend.eras if era in wanted):
        run = execute(baseline_for(backend, mode, era), scenario, timeout_s, backend)
        runs[era] = run if judge_caller else replace(run, caller={})
    return Baselines(
        scenario, mode, backend.eras[0], runs, expected_writes(scenario), divergences_of(backend)
    )


def _probed_with(divergence: KnownDivergence, capabilities: Optional[Capabilities]) -> bool:
    if divergence.capability is None or capabilities is None:
        return False
    name, value = divergence.capability
    return getattr(capabilities, name, None) == value


def _identical(run: Execution, execution: Execution) -> bool:
    """Both completed, with the same buffers byte for byte."""
    return (
        run.error is None
        and execution.error is None
        and buffers_equal(run.buffers, execution.buffers)
    )


def _self_check(
    baselines: Baselines,
    run: Execution,
    run_alone: list[Finding],
    execution: Execution,
    identical: bool,
) -> list[Finding]:
    """self_check of `execution`. The oracles that judge a run alone read only its buffers and
    backend: one byte-identical to `run` (`identical`, compared once by the caller) gets
    `run_alone`, `run`'s findings, without a second scan of every buffer."""
    if identical and run.backend == execution.backend:
        return [copy.copy(finding) for finding in run_alone]
    return self_check(baselines.scenario, execution, baselines.expected)


def judge_candidate(
    baselines: Baselines,
    era: str,
    execution: Execution,
    capabilities: Optional[Capabilities] = None,
) -> Verdict:
    """A candidate of `era` (whose SUT probed with `capabilities`, if foreign) that ran
    `execution`."""
    scenario, mode, expected = baselines.scenario, baselines.mode, baselines.expected
    own_era = baselines.eras[era]
    run = baselines.runs[era]
    identical = _identical(run, execution)
    alone = _self_check(baselines, run, baselines.alone[era], execution, identical)
    findings = judge(scenario, run, execution, expected, alone, identical)
    if not findings:
        if own_era.outcome is Outcome.KNOWN_DIVERGENCE:
            return Verdict(Outcome.KNOWN_DIVERGENCE, [], own_era.divergences)
        return Verdict(Outcome.BOTH_RAISED if execution.error is not None else Outcome.PASS)
    own = [d for d in baselines.divergences if era in d.eras and _probed_with(d, capabilities)]
    covering = _covering(scenario, mode, findings, own) if own else None
    if covering:
        return Verdict(Outcome.KNOWN_DIVERGENCE, findings, covering)
    if (
        own_era.outcome is Outcome.KNOWN_DIVERGENCE
        and all(d.kind == FIXED_LATER for d in own_era.divergences)
        and not judge(scenario, baselines.truth, execution, expected, alone)
    ):
        return Verdict(Outcome.BOTH_RAISED if execution.error is not None else Outcome.PASS)
    return Verdict(Outcome.FINDING, findings)


def decide(baselines: Baselines, candidate: Candidate, execution: Execution) -> Verdict:
    """judge_candidate, then what this machine or driver cannot do (harness/sut/limits.py): a
    finding that explains is a skip."""
    verdict = judge_candidate(baselines, candidate.era, execution, candidate.capabilities)
    if verdict.outcome is Outcome.FINDING:
        reason = skip_reason(baselines.scenario, candidate, verdict.findings)
        if reason is not None:
            return Verdict(Outcome.SKIPPED, verdict.findings, skip_reason=reason)
    return verdict
