"""Bisect over releases: the first release, in release order, where one scenario's behaviour
differs from the first release's.

A release's behaviour is the verdict of one check (the scenario through one backend call site,
the release as the candidate, in the call convention its capabilities fit): its outcome, the
divergences that explain it and the oracle of its first finding. A release that cannot be
judged here (it does not install, or does not import) is skipped, as `git bisect skip` does, and
its neighbours are tried instead. Behaviour is assumed to change once between the two ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from backends.registry import Backend
from harness.plan.baseline import baseline_for
from harness.plan.candidate import Candidate
from harness.plan.sut_choice import candidate_module, load_sut, stop_loaded, with_cp_group
from harness.run.cells import check_scenario
from harness.sut.worker.cp_group import CP_WORLD
from reports.outcome import Outcome, normalised
from scenarios.model import Scenario


@dataclass(frozen=True)
class Probe:
    """One release tried: its behaviour, or why it could not be judged (`skipped`)."""

    release: str  # a release's spec, or a commit's SHA
    behaviour: str = ""
    skipped: str = ""
    finding: bool = False  # the check has a finding: its SUT fails it


@dataclass
class Bisection:
    releases: list[str]
    probes: list[Probe] = field(default_factory=list)
    first_changed: Optional[str] = None  # None: no release behaves otherwise than the first
    last_same: Optional[str] = None

    def behaviour(self, release: str) -> str:
        return next(p.behaviour for p in self.probes if p.release == release and not p.skipped)


def bisect(releases: list[str], judge: Callable[[str], Probe]) -> Bisection:
    """The first of `releases` (in order, the ends included) whose behaviour differs from
    releases[0]'s. `judge(release)` gives its Probe; both ends must be judged."""
    result = Bisection(list(releases))
    known: dict[str, Probe] = {}

    def probe(index: int) -> Probe:
        release = releases[index]
        if release not in known:
            known[release] = judge(release)
            result.probes.append(known[release])
        return known[release]

    first, last = probe(0), probe(len(releases) - 1)
    for end in (first, last):
        if end.skipped:
            raise ValueError(
                f"{end.release} cannot be judged, so it cannot end a bisection: {end.skipped}"
            )
    if first.behaviour == last.behaviour:
        return result
    same, changed = 0, len(releases) - 1  # releases[same] behaves as the first; [changed] not
    while changed - same > 1:
        middle = _judged_between(same, changed, probe)
        if middle is None:  # every release between is skipped: the change is among them
            break
        if probe(middle).behaviour == first.behaviour:
            same = middle
        else:
            changed = middle
    result.first_changed, result.last_same = releases[changed], releases[same]
    return result


def _judged_between(low: int, high: int, probe: Callable[[int], Probe]) -> Optional[int]:
    """A release strictly between `low` and `high` that can be judged, tried from the middle
    outwards; None when none can."""
    middle = (low + high) // 2
    order = sorted(range(low + 1, high), key=lambda index: (abs(index - middle), index))
    return next((index for index in order if not probe(index).skipped), None)


def probe_of(spec: str, scenario: Scenario, backend: Backend, mode: str, label: str = "") -> Probe:
    """The verdict of one check of `scenario` with the SUT `spec` as the candidate, through
    `backend`'s call site in the era its capabilities fit: its behaviour is the outcome, the
    divergences and the first oracle. `label` names it (default: `spec`). A SUT that does not
    load (SutLoadError), fits no era or whose check is skipped (ValueError) raises."""
    kinds = [scenario.geometry.kind.name]  # the one kind it writes
    loaded = with_cp_group(load_sut(spec, kinds=kinds), spec, CP_WORLD, kinds=kinds)
    if loaded.era is None:
        stop_loaded(loaded)
        raise ValueError(loaded.unfit_reason)
    module, in_worker = candidate_module(loaded, backend.name)
    candidate = Candidate(
        spec, module, loaded.era, "-", "cpu", backend.name, mode, loaded.capabilities,
        in_worker=in_worker,
    )  # fmt: skip
    try:
        (row, *_) = check_scenario(
            scenario, baseline_for(backend, mode), [candidate], 60.0, backend
        )
    finally:
        stop_loaded(loaded)
    if row.outcome is Outcome.SKIPPED:
        raise ValueError(f"its check is skipped: {row.skip.reason if row.skip else ''}")
    said = str(row.outcome)
    if row.divergences:
        said += f" ({', '.join(d.name for d in row.divergences)})"
    if row.findings:
        said += f": {row.findings[0].oracle}"
    return Probe(label or spec, said, finding=normalised(row.outcome) == Outcome.FINDING)
