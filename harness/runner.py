"""The differential runner: every scenario through the baseline and every candidate, judged.

For each (pool kind, dtype) it draws the scenarios, and for each backend and mode runs the
baseline once per scenario and each candidate against it. Results stream to a callback so the
CLI can show progress and write repro files as findings appear.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from backends.registry import Backend, backend_named
from harness.candidate import Candidate
from backends.divergences import KnownDivergence, explain
from harness.execute import Execution, execute
from harness.sut.client import IsolatedSut
from harness.expectations import expected_writes
from harness.findings import Finding
from harness.oracles import judge, self_check
from harness.sharding import in_shard
from harness.sut.limits import limit_for
from harness.plan import RunOptions, Skip, SutChoice, baseline_for, candidates_for
from scenarios.builtin import default_scenarios, random_scenarios
from scenarios.explore import explore
from scenarios.model import Scenario
from scenarios.profiles import Profile
from scenarios.regressions import regression_scenarios
from scenarios.strategies import scenarios as scenario_strategy


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
    reproduce: str = ""               # Hypothesis runs: the seed and the reproduce blob


def scenarios_for(pool: str, dtype: str, options: RunOptions) -> list[Scenario]:
    if options.scenarios is not None:
        return [s for s in options.scenarios if (s.geometry.pool, s.geometry.dtype) == (pool, dtype)]
    return default_scenarios(pool, dtype, options.seed) + random_scenarios(
        pool, dtype, options.seed, options.examples)


def execute_candidate(candidate: Candidate, scenario: Scenario, reference: Execution,
                      timeout_s: Optional[float], backend: Backend) -> Execution:
    """In this process, or in the SUT's own worker process (only differing bytes travel back)."""
    if isinstance(candidate.module, IsolatedSut):
        return candidate.module.execute(scenario, candidate.backend, candidate.mode, candidate.device,
                                        known=reference, timeout_s=timeout_s or 60.0)
    return execute(candidate, scenario, timeout_s, backend)


def check_scenario(scenario: Scenario, baseline: Candidate, candidates: list[Candidate],
                   timeout_s: Optional[float], backend: Optional[Backend] = None) -> list[CellResult]:
    """`backend` is the cell's call-site entry: by default the registry's, in a mutant run the
    mutant's table's (RunOptions.backend_table)."""
    backend = backend or backend_named(baseline.backend)
    reference = execute(baseline, scenario, timeout_s, backend)
    expected = expected_writes(scenario)
    results = []
    # The baseline must obey the untouched-slot rule too, or every comparison is moot.
    own = self_check(scenario, reference, expected)
    if own:
        for finding in own:
            finding.candidate = baseline.label
        results.append(CellResult(baseline, scenario, "findings", own, label=baseline.label))
    for candidate in candidates:
        execution = execute_candidate(candidate, scenario, reference, timeout_s, backend)
        findings = judge(scenario, reference, execution, expected)
        for finding in findings:
            finding.candidate = candidate.label
        limit = limit_for(scenario, candidate, findings) if findings else None
        if limit is not None:
            results.append(CellResult(candidate, scenario, "skipped", label=candidate.label,
                                      skip=Skip(candidate.sut, candidate.era, candidate.engine,
                                                f"{limit.name}: {limit.reason}")))
            continue
        divergence = explain(scenario, candidate, findings, backend.divergences) if findings else None
        outcome = "known_divergence" if divergence else ("findings" if findings else "pass")
        results.append(CellResult(candidate, scenario, outcome, findings, divergence,
                                  execution.write_ns, candidate.label))
    return results


@dataclass(frozen=True)
class Cell:
    """One (pool, dtype, backend, mode): a baseline and the candidates judged against it."""
    pool: str
    dtype: str
    backend: Backend
    mode: str

    @property
    def key(self) -> str:
        return f"{self.pool}/{self.dtype}/{self.backend.name}:{self.mode}"


def cells_of(options: RunOptions, pool: str, dtype: str) -> Iterator[Cell]:
    for backend_name in options.backends:
        backend = options.backend_table[backend_name]
        if pool in backend.pool_kinds and dtype in getattr(backend, "dtypes", (dtype,)):
            for mode in backend.modes:
                cell = Cell(pool, dtype, backend, mode)
                if in_shard(cell.key, options.shard):
                    yield cell


def _skipped(backend: Backend, scenario: Scenario, mode: str) -> bool:
    skip_for = getattr(backend, "skip_for", None)
    return skip_for is not None and skip_for(scenario, mode) is not None


def _candidates(cell: Cell, suts: list[SutChoice], options: RunOptions,
                scenarios: list[Scenario], on_result: Callable[[CellResult], None]) -> list[Candidate]:
    """The cell's runnable candidates; each one that cannot run is reported as skipped."""
    candidates = []
    for item in candidates_for(cell.backend, cell.mode, suts, options, cell.pool, cell.dtype):
        if isinstance(item, Candidate):
            candidates.append(item)
        else:
            for scenario in scenarios:
                on_result(CellResult(None, scenario, "skipped", skip=item,
                                     label=f"{item.sut}/{item.era}/{item.engine}"))
    return candidates


def _groups(options: RunOptions) -> list[tuple[str, str]]:
    if options.scenarios is not None:
        return list(dict.fromkeys((s.geometry.pool, s.geometry.dtype) for s in options.scenarios))
    return [(pool, dtype) for pool in options.pools for dtype in options.dtypes]


def run(options: RunOptions, suts: list[SutChoice],
        on_result: Callable[[CellResult], None],
        on_group: Callable[[str, int, int], None] = lambda group, done, total: None) -> None:
    """The deterministic run: the builtin (or the user's) scenarios through every cell."""
    groups = _groups(options)
    for index, (pool, dtype) in enumerate(groups):
        scenarios = scenarios_for(pool, dtype, options)
        for cell in cells_of(options, pool, dtype):
            baseline = baseline_for(cell.backend, cell.mode)
            candidates = _candidates(cell, suts, options, scenarios, on_result)
            for scenario in scenarios:
                if not _skipped(cell.backend, scenario, cell.mode):
                    for result in check_scenario(scenario, baseline, candidates, options.timeout_s,
                                                  cell.backend):
                        on_result(result)
        on_group(f"{pool} {dtype}", index + 1, len(groups))


@dataclass
class CellStats:
    """What a Hypothesis-driven cell did, for the summary."""
    cell: Cell
    examples: int            # scenarios checked before the first failure (shrinking excluded)
    regressions: int
    seconds: float
    failed: bool = False
    blob: Optional[str] = None


@dataclass(frozen=True)
class Exploring:
    """How `kvh run --profile` explores: the profile and what the command line adds to it."""
    profile: Profile
    max_examples: Optional[int] = None   # --examples overrides the profile's
    special_values: bool = False
    database_dir: Optional[Path] = None


# A cell whose share of the run's time budget is smaller than this draws no examples at all:
# Hypothesis would spend it rejecting draws.
MIN_CELL_SECONDS = 0.5


def has_findings(results: list[CellResult]) -> bool:
    return any(result.outcome == "findings" for result in results)


def explore_run(options: RunOptions, suts: list[SutChoice], exploring: Exploring,
                on_result: Callable[[CellResult], None],
                on_cell: Callable[[CellStats], None]) -> None:
    """Every cell: the named regressions, then Hypothesis examples; a failure is shrunk and only
    the minimal failing scenario's results are reported. The profile's time budget is shared
    among the cells still to run."""
    profile = exploring.profile
    settings = profile.settings(exploring.max_examples, exploring.database_dir)
    cells = [cell for pool, dtype in _groups(options) for cell in cells_of(options, pool, dtype)]
    started = time.monotonic()
    for index, cell in enumerate(cells):
        baseline = baseline_for(cell.backend, cell.mode)
        regressions = [s for s in regression_scenarios(cell.pool, cell.dtype)
                       if not _skipped(cell.backend, s, cell.mode)]
        candidates = _candidates(cell, suts, options, regressions, on_result)
        for scenario in regressions:
            for result in check_scenario(scenario, baseline, candidates, options.timeout_s, cell.backend):
                on_result(result)
        budget = None
        if profile.run_seconds is not None:
            budget = max(0.0, profile.run_seconds - (time.monotonic() - started)) / (len(cells) - index)
        if budget is not None and budget < MIN_CELL_SECONDS:
            on_cell(CellStats(cell, 0, len(regressions), 0.0))
            continue
        strategy = scenario_strategy(cell.pool, cell.dtype, exploring.special_values, profile.pool_bytes)
        strategy = strategy.filter(lambda s, cell=cell: not _skipped(cell.backend, s, cell.mode))
        check = lambda s: check_scenario(s, baseline, candidates, options.timeout_s, cell.backend)  # noqa: E731
        outcome = explore(strategy, check,
                          has_findings, settings, options.seed, cell.key, budget,
                          on_pass=lambda results: [on_result(r) for r in results])
        for result in outcome.failure or ():
            result.reproduce = f"seed {options.seed}, {outcome.blob or 'no reproduce blob'}"
            on_result(result)
        on_cell(CellStats(cell, outcome.generated, len(regressions), outcome.seconds,
                          outcome.failure is not None, outcome.blob))
