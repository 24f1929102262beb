"""The one place that decides an outcome: the era table and every candidate's verdict.

For one scenario and one cell (backend, mode), the baseline pools
(harness.plan.baseline.baseline_module) run through each era's call site. The oldest era's run is
the ground truth G; era E's run is R_E.

Era table (the call-site models' own claim): R_E is compared with G by the oracles. No
difference: PASS (BOTH_RAISED when both raised alike). Every difference, R_E's own self-check
findings included, covered by a declared divergence of era E that applies: KNOWN_DIVERGENCE
naming the divergences. Anything else: FINDING against the call-site model.

Candidate of era E: compared with R_E; its self-check findings that R_E's divergences cover are
R_E's behaviour and are dropped, where its buffers equal R_E's on every slot but the sink. No
finding: KNOWN_DIVERGENCE when R_E differs from G by declared divergences (PASS instead when the
candidate differs from R_E unseen and behaves as G under fixed-later ones), else BOTH_RAISED when
it raised alike with R_E, else PASS. Findings: a
divergence declared for a capability the candidate's SUT probes with that covers them makes it a
KNOWN_DIVERGENCE; when every divergence between R_E and G is `fixed-later` and the candidate
equals G, it already has the fix and is judged against G (PASS, or BOTH_RAISED); otherwise it is
a FINDING. A declared SUT limit that explains the finding makes it SKIPPED
(harness/sut/probe/limits.py).
docs/verdict.md says the same for readers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Optional

from backends.divergences import CHANGED, DIVERGENCES, FIXED_LATER, KnownDivergence
from backends.registry import Backend
from harness.compare.comparison import Comparison
from harness.compare.expectations import Expected
from harness.compare.findings import Finding, trail_text
from harness.compare.snapshot import Execution
from pools.judge.token_writes import UndefinedBehaviour
from reports.outcome import Outcome
from scenarios.model import Scenario

if TYPE_CHECKING:  # the verdict reads the capabilities it is passed; it never probes
    from harness.sut.probe.capabilities import Capabilities


@dataclass
class Verdict:
    outcome: Outcome
    findings: list[Finding] = field(default_factory=list)
    divergences: tuple[KnownDivergence, ...] = ()
    skip_reason: str = ""

    @property
    def divergence(self) -> Optional[KnownDivergence]:
        return self.divergences[0] if self.divergences else None


def with_release_trail(verdict: Verdict, trail: tuple[str, ...]) -> Verdict:
    """The verdict's findings, each naming the release functions the candidate's writes ran."""
    if not trail:
        return verdict
    ran = trail_text(trail)
    return replace(verdict, findings=[replace(f, release_trail=ran) for f in verdict.findings])


def divergences_of(backend: Backend) -> tuple[KnownDivergence, ...]:
    """The divergences that can hold in a backend's cells: the shared ones and its own."""
    return (*DIVERGENCES, *backend.divergences)


def covering(
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
    # Derived in __post_init__: the scenario's comparisons (each pair compared once, whoever asks)
    # and each era's row of the era table.
    comparison: Comparison = field(init=False)
    eras: dict[str, Verdict] = field(init=False)

    def __post_init__(self) -> None:
        self.comparison = Comparison(self.scenario, self.expected)
        self.eras = {era: self._era_verdict(era) for era in self.runs}

    @property
    def truth(self) -> Execution:
        return self.runs[self.ground]

    def _era_verdict(self, era: str) -> Verdict:
        run = self.runs[era]
        for side in (run, self.truth):
            if undefined(side):  # what the era's door does here is established by no code
                return Verdict(Outcome.SKIPPED, skip_reason=undefined_reason(side))
        if era == self.ground:
            own = list(self.comparison.self_check(run))
            raised = Outcome.BOTH_RAISED if run.error is not None else Outcome.PASS
            return Verdict(Outcome.FINDING, own) if own else Verdict(raised)
        # An era's run answers for its own rule breaks as well as for every difference.
        judgement = self.comparison.judge(self.truth, run)
        findings = [*judgement.alone, *judgement.exception, *judgement.paired]
        if not findings:
            return Verdict(Outcome.BOTH_RAISED if run.error is not None else Outcome.PASS)
        # A run alone can break the scenario's own rules the way a divergence says (a one-row
        # broadcast writes slots no token owns): those findings are the divergence's evidence.
        explained = covering(self.scenario, self.mode, findings, self.era_divergences(era))
        if explained is None:
            return Verdict(Outcome.FINDING, findings)
        return Verdict(Outcome.KNOWN_DIVERGENCE, findings, explained)

    def era_divergences(self, era: str) -> list[KnownDivergence]:
        """What era E's call site may differ by from the ground truth (no SUT's own)."""
        return [d for d in self.divergences if era in d.eras and not d.capability]


def undefined(run: Execution) -> bool:
    """Whether a baseline's run raised the judge's UndefinedBehaviour: no code that runs here
    establishes what its era's door does on this input (pools/judge/token_writes.py)."""
    return run.error_type == UndefinedBehaviour.__name__


def undefined_reason(run: Execution) -> str:
    """One reason for every check the same undefined input leaves unjudged (no place in it)."""
    return f"undefined: {(run.error or '').removeprefix(UndefinedBehaviour.__name__ + ': ')}"


def _probed_with(divergence: KnownDivergence, capabilities: Optional[Capabilities]) -> bool:
    if divergence.capability is None or capabilities is None:
        return False
    name, value = divergence.capability
    return getattr(capabilities, name, None) == value


def _beyond_own_era(
    baselines: Baselines, era: str, alone: tuple[Finding, ...], like_era_run: bool
) -> list[Finding]:
    """The candidate's self-check findings less those its era's own baseline shows as a declared
    divergence, where the candidate wrote exactly what that baseline wrote (`like_era_run`: every
    slot but the padding sink): behaving as its era is never a finding."""
    if not alone or not like_era_run:
        return list(alone)
    declared = baselines.eras[era].divergences
    return [
        finding
        for finding in alone
        if not any(d.covers(baselines.scenario, finding) for d in declared)
    ]


def judge_candidate(
    baselines: Baselines,
    era: str,
    execution: Execution,
    capabilities: Optional[Capabilities] = None,
    call_site_changed: bool = False,
) -> Verdict:
    """A candidate of `era` (whose SUT probed with `capabilities`, if foreign) that ran
    `execution`; `call_site_changed`: the census found the release's call site is not its era's
    model (harness/plan/candidate.py census_evidence)."""
    scenario, mode, comparison = baselines.scenario, baselines.mode, baselines.comparison
    own_era = baselines.eras[era]
    run = baselines.runs[era]
    if undefined(run):  # no behaviour to hold the candidate to: not judged, never a finding
        return Verdict(Outcome.SKIPPED, skip_reason=undefined_reason(run))
    diverged = own_era.outcome is Outcome.KNOWN_DIVERGENCE
    # Only where the era diverges does it matter whether the candidate equals its era's run on
    # every slot but the sink.
    like_era_run = diverged and (
        comparison.identical(run, execution) or comparison.identical(run, execution, True)
    )
    judgement = comparison.judge(run, execution)
    findings = judgement.findings(_beyond_own_era(baselines, era, judgement.alone, like_era_run))
    if execution.release_sites:  # the release's own code wrote: say where it called the pool
        findings = [replace(f, release_site=", ".join(execution.release_sites)) for f in findings]
    completed = Outcome.BOTH_RAISED if execution.error is not None else Outcome.PASS

    # Release code (backends/real_code.py) wrote with its own call site, which the census found
    # is not its era's model: where that model carries a changed behaviour, a release whose call
    # site predates the change (0.5.15 to 0.5.18 intel_amx, before fp8 writes passed
    # k_scale_float) writes as the ground truth. The census difference is on the row.
    predates = bool(execution.release_sites) and call_site_changed
    excused_kinds = {FIXED_LATER, CHANGED} if predates else {FIXED_LATER}

    def has_the_fix() -> bool:
        """Every divergence of the era is fixed-later (or, for release code, changed), and the
        candidate behaves as the ground truth (its own self-check whole): it already has the
        fix, or its own call site predates the change."""
        return (
            diverged
            and all(d.kind in excused_kinds for d in own_era.divergences)
            and not comparison.judge(baselines.truth, execution).findings()
        )

    if not findings:
        if not diverged:
            return Verdict(completed)
        # No oracle compares slots no token writes with R_E: a candidate that left them as the
        # ground truth did (no broadcast) differs from R_E unseen, and has the fix.
        if not like_era_run and has_the_fix():
            return Verdict(completed)
        return Verdict(Outcome.KNOWN_DIVERGENCE, [], own_era.divergences)
    own = [d for d in baselines.divergences if era in d.eras and _probed_with(d, capabilities)]
    explained = covering(scenario, mode, findings, own) if own else None
    if explained:
        return Verdict(Outcome.KNOWN_DIVERGENCE, findings, explained)
    if has_the_fix():
        return Verdict(completed)
    return Verdict(Outcome.FINDING, findings)
