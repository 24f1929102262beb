"""The differential runner: every scenario through the baseline and every candidate, judged.

For each (pool kind, dtype) it draws the scenarios, and for each backend and mode runs the
baseline once per scenario and each candidate against it. Results stream to a callback so the
CLI can show progress and write repro files as findings appear.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from backends.registry import BACKENDS
from harness.candidate import Candidate
from harness.divergences import KnownDivergence, explain
from harness.execute import execute
from harness.expectations import expected_writes
from harness.findings import Finding
from harness.oracles import judge
from harness.plan import RunOptions, Skip, SutChoice, baseline_for, candidates_for
from scenarios.builtin import default_scenarios, random_scenarios
from scenarios.model import Scenario


@dataclass
class CellResult:
    """One candidate on one scenario."""
    candidate: Optional[Candidate]
    scenario: Scenario
    outcome: str                      # pass | findings | known_divergence | skipped
    findings: list[Finding] = field(default_factory=list)
    divergence: Optional[KnownDivergence] = None
    write_ns: int = 0
    label: str = ""
    skip: Optional[Skip] = None


def scenarios_for(pool: str, dtype: str, options: RunOptions) -> list[Scenario]:
    if options.scenarios is not None:
        return [s for s in options.scenarios if (s.geometry.pool, s.geometry.dtype) == (pool, dtype)]
    return default_scenarios(pool, dtype, options.seed) + random_scenarios(
        pool, dtype, options.seed, options.examples)


def check_scenario(scenario: Scenario, baseline: Candidate, candidates: list[Candidate],
                   timeout_s: Optional[float]) -> list[CellResult]:
    reference = execute(baseline, scenario, timeout_s)
    expected = expected_writes(scenario)
    results = []
    # The baseline must obey the untouched-slot rule too, or every comparison is moot.
    self_check = judge(scenario, reference, reference, expected)
    if self_check:
        for finding in self_check:
            finding.candidate = baseline.label
        results.append(CellResult(baseline, scenario, "findings", self_check, label=baseline.label))
    backend = BACKENDS[baseline.backend]
    for candidate in candidates:
        execution = execute(candidate, scenario, timeout_s)
        findings = judge(scenario, reference, execution, expected)
        for finding in findings:
            finding.candidate = candidate.label
        divergence = explain(scenario, candidate, findings, backend.divergences) if findings else None
        outcome = "known_divergence" if divergence else ("findings" if findings else "pass")
        results.append(CellResult(candidate, scenario, outcome, findings, divergence,
                                  execution.write_ns, candidate.label))
    return results


def run(options: RunOptions, suts: list[SutChoice],
        on_result: Callable[[CellResult], None],
        on_group: Callable[[str, int, int], None] = lambda group, done, total: None) -> None:
    if options.scenarios is not None:
        groups = list(dict.fromkeys((s.geometry.pool, s.geometry.dtype) for s in options.scenarios))
    else:
        groups = [(pool, dtype) for pool in options.pools for dtype in options.dtypes]
    for index, (pool, dtype) in enumerate(groups):
        scenarios = scenarios_for(pool, dtype, options)
        for backend_name in options.backends:
            backend = BACKENDS[backend_name]
            if pool not in backend.pool_kinds:
                continue
            for mode in backend.modes:
                baseline = baseline_for(backend, mode)
                candidates = []
                for item in candidates_for(backend, mode, suts, options):
                    if isinstance(item, Candidate):
                        candidates.append(item)
                    else:
                        for scenario in scenarios:
                            on_result(CellResult(None, scenario, "skipped", skip=item,
                                                 label=f"{item.sut}/{item.era}/{item.engine}"))
                for scenario in scenarios:
                    for result in check_scenario(scenario, baseline, candidates, options.timeout_s):
                        on_result(result)
        on_group(f"{pool} {dtype}", index + 1, len(groups))
