"""One scenario's comparisons, each done once: the object that owns every reuse of work.

A verdict asks the same questions of the same runs several times: an era's run against the ground
truth, a candidate against its era's run and then against the ground truth, each run's own
self-check. `Comparison` answers each question once and keeps the answer, so the decision in
harness/compare/verdict.py reads as if every oracle ran on every pair, and nothing in it exists
to save time. Two shortcuts are taken, both exact:
- two runs whose buffers are byte-identical (compared once per pair) have nothing to tell the
  oracles that read only buffers (`Oracle.buffers_only`), so those are not run on that pair;
- a run byte-identical to one already self-checked, through the same backend, gets that run's
  self-check findings (Findings are immutable, so they are shared, not copied).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable

from harness.compare.byte_compare import buffers_equal
from harness.compare.expectations import Expected
from harness.compare.findings import Finding
from harness.compare.oracles import ALWAYS, BOTH_RAISED, COMPLETED, ORACLES, Oracle, self_check
from harness.compare.snapshot import Execution
from scenarios.model import Scenario


@dataclass(frozen=True)
class Judgement:
    """What the oracles say of a candidate run against a baseline run."""

    exception: tuple[Finding, ...]  # the exception oracle: one side raised, or both differently
    paired: tuple[Finding, ...]  # the oracles that compare the two runs
    alone: tuple[Finding, ...]  # the candidate's self-check: the oracles of one run

    def findings(self, alone: tuple[Finding, ...] | list[Finding] | None = None) -> list[Finding]:
        """Every finding as a candidate's verdict reads them: the exception oracle's alone when it
        spoke, else the paired oracles' and the self-check's (`alone`: those of the self-check
        findings that count, by default all)."""
        if self.exception:
            return list(self.exception)
        return [*self.paired, *(self.alone if alone is None else alone)]


class Comparison:
    """The oracles over the runs of one scenario, each pair compared and each run checked once."""

    def __init__(self, scenario: Scenario, expected: Expected) -> None:
        self.scenario = scenario
        self.expected = expected
        self._identical = _ByRuns()
        self._self_checks = _ByRuns()

    def identical(self, first: Execution, second: Execution, skip_sink: bool = False) -> bool:
        """Both completed, with the same buffers byte for byte (`skip_sink`: but in slot 0)."""
        return self._identical.get(
            tuple(sorted((first, second), key=id)),  # either way round: one question
            skip_sink,
            lambda: (
                first.error is None
                and second.error is None
                and buffers_equal(first.buffers, second.buffers, skip_sink)
            ),
        )

    def self_check(self, execution: Execution) -> tuple[Finding, ...]:
        """The oracles that need no baseline, on one run (harness.compare.oracles.self_check)."""
        return self._self_checks.get(
            (execution,), None, lambda: tuple(self_check(self.scenario, execution, self.expected))
        )

    def judge(self, baseline: Execution, candidate: Execution) -> Judgement:
        """Every oracle on the pair. When one side raised, only the exception oracle speaks; when
        both raised alike, the bytes written before the raise are compared."""
        exception = self._ask(ALWAYS, ORACLES, baseline, candidate)
        if candidate.error is not None:
            paired = () if exception else self._ask(BOTH_RAISED, ORACLES, baseline, candidate)
            return Judgement(exception, paired, ())
        identical = self.identical(baseline, candidate)
        if identical and candidate.backend == baseline.backend:
            self._share_self_check(baseline, candidate)
        alone = self.self_check(candidate)
        if exception:
            return Judgement(exception, (), alone)
        pairs = [o for o in ORACLES if not o.alone and not (identical and o.buffers_only)]
        return Judgement((), self._ask(COMPLETED, pairs, baseline, candidate), alone)

    def _share_self_check(self, checked: Execution, same: Execution) -> None:
        self._self_checks.get((same,), None, lambda: self.self_check(checked))

    def _ask(
        self, when: str, oracles: tuple[Oracle, ...] | list[Oracle], baseline, candidate
    ) -> tuple[Finding, ...]:
        return tuple(
            finding
            for oracle in oracles
            if oracle.when == when
            for finding in oracle.check(self.scenario, baseline, candidate, self.expected)
        )


class _ByRuns:
    """Answers about runs, keyed by the runs' identity and held weakly: no run is kept alive for
    its answer (a bench keeps one comparison for many timed runs), and a new run at a dead one's
    address is not taken for it: its answer is computed afresh, in place of the stale one."""

    def __init__(self) -> None:
        self._answers: dict[tuple, tuple[tuple[weakref.ref, ...], Any]] = {}

    def get(self, runs: tuple[Execution, ...], extra: Any, compute: Callable[[], Any]) -> Any:
        key = (*map(id, runs), extra)
        held = self._answers.get(key)
        if held is None or any(ref() is not run for ref, run in zip(held[0], runs)):
            held = (tuple(weakref.ref(run) for run in runs), compute())
            self._answers[key] = held
        return held[1]


def judge(
    scenario: Scenario, baseline: Execution, candidate: Execution, expected: Expected
) -> list[Finding]:
    """Every oracle's findings on one pair of runs, as a candidate's verdict reads them."""
    return Comparison(scenario, expected).judge(baseline, candidate).findings()
