"""The differential runner: every scenario through the baselines and every candidate, judged.

For each (pool kind, dtype) it draws the scenarios, and for each backend and mode runs the
baseline through every era's call site the cell needs (harness/verdict.py decides every outcome)
and each candidate against its own era's run. Results stream to a callback so the CLI can show
progress and write repro files as findings appear. Every planned check yields one row: a
declared skip is a SKIPPED row with its reason, a cell exploration gave no example is UNEXPLORED.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from hypothesis import settings as Settings

from backends.divergences import KnownDivergence
from backends.registry import Backend, backend_named
from harness.candidate import Candidate
from harness.execute import Execution, execute
from harness.findings import Finding
from harness.plan import RunOptions, Skip, SutChoice, baseline_for, candidates_for
from harness.sharding import in_shard
from harness.sut.client import IsolatedSut
from harness.verdict import Baselines, Verdict, decide, run_baselines
from reports.outcome import Outcome
from scenarios.builtin import default_scenarios, random_scenarios
from scenarios.explore import examples_within, explore
from scenarios.materialize import forget_tensors
from scenarios.model import Scenario
from scenarios.profiles import Profile
from scenarios.reach import reach_scenario
from scenarios.regressions import regression_scenarios
from scenarios.strategies import scenarios as scenario_strategy

MODEL_SUT = "model"  # the sut of an era-table row: the baseline through one era's call site


@dataclass
class CellResult:
    """One candidate on one scenario, or one row of the era table (`era_row`)."""

    candidate: Optional[Candidate]
    scenario: Optional[Scenario]  # None only for an UNEXPLORED row
    outcome: Outcome
    findings: list[Finding] = field(default_factory=list)
    divergences: tuple[KnownDivergence, ...] = ()
    write_ns: int = 0
    label: str = ""
    skip: Optional[Skip] = None
    reproduce: str = ""  # Hypothesis runs: the seed and the reproduce blob
    model: Optional[Candidate] = None  # an era-table row's subject: the baseline of one era (sut
    # "model"); such a row has no candidate
    pool: str = ""  # the cell's pool and dtype (filled from the scenario)
    dtype: str = ""

    def __post_init__(self) -> None:
        if self.scenario is not None:
            self.pool, self.dtype = self.scenario.geometry.pool, self.scenario.geometry.dtype

    @property
    def divergence(self) -> Optional[KnownDivergence]:
        return self.divergences[0] if self.divergences else None

    @property
    def era_row(self) -> bool:
        return self.model is not None

    @property
    def subject(self) -> Optional[Candidate]:
        """What was run: the candidate, or an era-table row's model."""
        return self.candidate or self.model


def scenarios_for(pool: str, dtype: str, options: RunOptions) -> list[Scenario]:
    if options.scenarios is not None:
        return [
            s for s in options.scenarios if (s.geometry.pool, s.geometry.dtype) == (pool, dtype)
        ]
    return default_scenarios(pool, dtype, options.seed) + random_scenarios(
        pool, dtype, options.seed, options.examples
    )


def execute_candidate(
    candidate: Candidate,
    scenario: Scenario,
    reference: Execution,
    timeout_s: Optional[float],
    backend: Backend,
) -> Execution:
    """In this process, or in the SUT's own worker process (only differing bytes travel back)."""
    if isinstance(candidate.module, IsolatedSut):
        execution = candidate.module.execute(
            scenario,
            candidate.backend,
            candidate.mode,
            candidate.device,
            known=reference,
            timeout_s=timeout_s or 60.0,
            era=candidate.era,
        )
        execution.backend = candidate.backend
        return execution
    return execute(candidate, scenario, timeout_s, backend)


def _candidate_row(
    candidate: Candidate, scenario: Scenario, verdict: Verdict, write_ns: int
) -> CellResult:
    skip = (
        Skip(candidate.sut, candidate.era, candidate.engine, verdict.skip_reason)
        if verdict.outcome is Outcome.SKIPPED
        else None
    )
    findings = [] if skip else [f.for_candidate(candidate.label) for f in verdict.findings]
    return CellResult(
        candidate,
        scenario,
        verdict.outcome,
        findings,
        verdict.divergences,
        write_ns,
        candidate.label,
        skip=skip,
    )


def era_rows(baselines: Baselines, backend: Backend) -> list[CellResult]:
    """The era table's rows for one scenario: each era other than the ground truth's."""
    rows = []
    for era, verdict in baselines.eras.items():
        if era == baselines.ground and verdict.outcome is not Outcome.FINDING:
            continue
        model = baseline_for(backend, baselines.mode, era)
        model = Candidate(
            MODEL_SUT, model.module, era, model.engine, model.device, model.backend, model.mode
        )
        against = (
            "its own untouched slots"
            if era == baselines.ground
            else f"the ground truth ({baselines.ground})"
        )
        label = f"{model.label}: era {era} against {against}"
        rows.append(
            CellResult(
                None,
                baselines.scenario,
                verdict.outcome,
                [finding.for_candidate(label) for finding in verdict.findings],
                verdict.divergences,
                label=label,
                model=model,
            )
        )
    return rows


def eras_needed(
    backend: Backend, candidates: Iterable[Candidate], table_eras: Iterable[str]
) -> list[str]:
    """The call sites whose baseline runs a cell needs: the candidates' eras, and the eras of the
    era table (the ground truth's comes with them: harness.verdict.run_baselines)."""
    wanted = {c.era for c in candidates} | set(table_eras)
    return [era for era in backend.eras if era in wanted]


def check_cell(
    scenario: Scenario,
    backend: Backend,
    mode: str,
    candidates: list[Candidate],
    timeout_s: Optional[float],
    table_eras: Optional[Iterable[str]] = None,
) -> list[CellResult]:
    """One scenario through one cell: the candidates' rows, then the era table's rows for
    `table_eras` (default: all of the backend's)."""
    eras = eras_needed(backend, candidates, backend.eras if table_eras is None else table_eras)
    try:
        baselines = run_baselines(scenario, backend, mode, eras, timeout_s)
        results = []
        for candidate in candidates:
            execution = execute_candidate(
                candidate, scenario, baselines.runs[candidate.era], timeout_s, backend
            )
            results.append(
                _candidate_row(
                    candidate,
                    scenario,
                    decide(baselines, candidate, execution),
                    execution.write_ns,
                )
            )
    finally:
        forget_tensors(scenario)
    return results + era_rows(baselines, backend)


def check_scenario(
    scenario: Scenario,
    baseline: Candidate,
    candidates: list[Candidate],
    timeout_s: Optional[float],
    backend: Optional[Backend] = None,
) -> list[CellResult]:
    """One row per candidate, in order, followed by any era-table row that is a FINDING against
    the model (never dropped). `baseline` names the cell (backend and mode); the baselines
    themselves are harness.plan.baseline_module's. `backend` is the cell's call-site entry: by
    default the registry's, in a mutant run the mutant's table's (RunOptions.backend_table)."""
    backend = backend or backend_named(baseline.backend)
    results = check_cell(scenario, backend, baseline.mode, candidates, timeout_s, table_eras=())
    return [r for r in results if not r.era_row or r.outcome is Outcome.FINDING]


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


def _backend_skip(backend: Backend, scenario: Scenario, mode: str) -> Optional[str]:
    """`name: reason` of the declared skip (or out-of-focus) that removes this check, if any."""
    skip_for = getattr(backend, "skip_for", None)
    skip = skip_for(scenario, mode) if skip_for is not None else None
    return None if skip is None else f"{skip.name}: {skip.reason}"


def _cell_skip(cell: Cell, scenario: Scenario) -> Optional[str]:
    """`name: reason (...)` of a declared skip that removes every scenario of the cell: one whose
    predicate reads only the pool kind, dtype and mode (backends/skips.py by_cell), holding for
    `scenario`, one of the cell's."""
    for skip in getattr(cell.backend, "skips", ()):
        if skip.by_cell and skip.applies(scenario, cell.mode):
            return f"{skip.name}: {skip.reason} (every scenario of the cell)"
    return None


def _skip_label(item: Skip, cell: Cell) -> str:
    return f"{item.sut}/{item.era}/{item.engine}/{cell.backend.name}:{cell.mode}"


def _candidates(
    cell: Cell,
    suts: list[SutChoice],
    options: RunOptions,
    scenarios: list[Scenario],
    on_result: Callable[[CellResult], None],
) -> list[Candidate]:
    """The cell's runnable candidates; each one that cannot run is a SKIPPED row per scenario."""
    candidates = []
    for item in candidates_for(cell.backend, cell.mode, suts, options, cell.pool, cell.dtype):
        if isinstance(item, Candidate):
            candidates.append(item)
        else:
            for scenario in scenarios:
                on_result(
                    CellResult(
                        None, scenario, Outcome.SKIPPED, skip=item, label=_skip_label(item, cell)
                    )
                )
    return candidates


def _skipped_rows(candidates: list[Candidate], scenario: Scenario, reason: str) -> list[CellResult]:
    """A declared backend skip removes the check for every candidate of the cell: one row each."""
    return [
        CellResult(
            c, scenario, Outcome.SKIPPED, label=c.label, skip=Skip(c.sut, c.era, c.engine, reason)
        )
        for c in candidates
    ]


def _table_eras(options: RunOptions) -> tuple[str, ...]:
    return tuple(options.eras) if options.era_table else ()


def _check_or_skip(
    cell: Cell, scenario: Scenario, candidates: list[Candidate], options: RunOptions
) -> list[CellResult]:
    reason = _backend_skip(cell.backend, scenario, cell.mode)
    if reason is not None:
        return _skipped_rows(candidates, scenario, reason)
    return check_cell(
        scenario, cell.backend, cell.mode, candidates, options.timeout_s, _table_eras(options)
    )


def planned_checks(options: RunOptions, suts: list[SutChoice]) -> int:
    """How many candidate rows a deterministic `run` yields: every (cell, scenario, candidate or
    skip), whatever its outcome. The era table's rows come on top."""
    total = 0
    for pool, dtype in _groups(options):
        scenarios = scenarios_for(pool, dtype, options)
        for cell in cells_of(options, pool, dtype):
            items = list(candidates_for(cell.backend, cell.mode, suts, options, pool, dtype))
            total += len(scenarios) * len(items)
    return total


def _groups(options: RunOptions) -> list[tuple[str, str]]:
    if options.scenarios is not None:
        return list(dict.fromkeys((s.geometry.pool, s.geometry.dtype) for s in options.scenarios))
    return [(pool, dtype) for pool in options.pools for dtype in options.dtypes]


def run(
    options: RunOptions,
    suts: list[SutChoice],
    on_result: Callable[[CellResult], None],
    on_group: Callable[[str, int, int], None] = lambda group, done, total: None,
) -> None:
    """The deterministic run: the builtin (or the user's) scenarios through every cell."""
    groups = _groups(options)
    for index, (pool, dtype) in enumerate(groups):
        scenarios = scenarios_for(pool, dtype, options)
        for cell in cells_of(options, pool, dtype):
            candidates = _candidates(cell, suts, options, scenarios, on_result)
            for scenario in scenarios:
                for result in _check_or_skip(cell, scenario, candidates, options):
                    on_result(result)
        on_group(f"{pool} {dtype}", index + 1, len(groups))


@dataclass
class CellStats:
    """What a Hypothesis-driven cell did, for the summary."""

    cell: Cell
    examples: int  # scenarios checked before the first failure (shrinking excluded)
    regressions: int
    seconds: float
    failed: bool = False
    blob: Optional[str] = None
    reach: int = 0  # the pinned top-of-pool scenarios (scenarios/reach.py) checked


@dataclass(frozen=True)
class Exploring:
    """How `kvh run --profile` explores: the profile and what the command line adds to it."""

    profile: Profile
    max_examples: Optional[int] = None  # --examples overrides the profile's
    special_values: bool = False
    database_dir: Optional[Path] = None


def has_findings(results: list[CellResult]) -> bool:
    return any(result.outcome is Outcome.FINDING for result in results)


def _not_checked(
    cell: Cell,
    candidates: list[Candidate],
    on_result: Callable[[CellResult], None],
    outcome: Outcome,
    reason: str,
) -> None:
    """One row per candidate for a cell that checked no scenario: skipped or unexplored."""
    for candidate in candidates:
        on_result(
            CellResult(
                candidate,
                None,
                outcome,
                label=candidate.label,
                skip=Skip(candidate.sut, candidate.era, candidate.engine, reason),
                pool=cell.pool,
                dtype=cell.dtype,
            )
        )


def cell_budget(
    run_seconds: Optional[float], cells: int, spent: float, index: int
) -> Optional[float]:
    """Seconds of exploration for cell `index` of `cells`: an equal share of the run's budget,
    fixed up front so that early cells cannot drain it, or more when earlier cells finished
    early and left time over. None: no time limit."""
    if run_seconds is None:
        return None
    share = run_seconds / max(1, cells)
    return max(share, (run_seconds - spent) / (cells - index))


def explore_run(
    options: RunOptions,
    suts: list[SutChoice],
    exploring: Exploring,
    on_result: Callable[[CellResult], None],
    on_cell: Callable[[CellStats], None],
) -> None:
    """Every cell: the named regressions and the pinned top-of-pool scenario (scenarios/reach.py),
    then Hypothesis examples; each failure is shrunk and only the minimal failing scenario's
    results are reported. Each cell gets as many examples as its share of the profile's time
    budget (cell_budget) holds at the cost its pinned scenarios measured, and at least the
    profile's min_examples; a cell that still drew none (every draw skipped) is UNEXPLORED, never
    a silent pass."""
    profile = exploring.profile
    settings = profile.settings(exploring.max_examples, exploring.database_dir)
    floor = min(profile.min_examples, settings.max_examples)
    cells = [cell for pool, dtype in _groups(options) for cell in cells_of(options, pool, dtype)]
    started = time.monotonic()
    for index, cell in enumerate(cells):
        budget = cell_budget(profile.run_seconds, len(cells), time.monotonic() - started, index)
        regressions = regression_scenarios(cell.pool, cell.dtype)
        reach = [reach_scenario(cell.pool, cell.dtype, profile.pool_bytes, options.seed)]
        pinned = regressions + reach
        candidates = _candidates(cell, suts, options, pinned, on_result)
        pinned_started = time.monotonic()
        for scenario in pinned:
            for result in _check_or_skip(cell, scenario, candidates, options):
                on_result(result)
        per_example = (time.monotonic() - pinned_started) / len(pinned)
        whole = _cell_skip(cell, pinned[-1])
        if whole is not None:
            _not_checked(cell, candidates, on_result, Outcome.SKIPPED, whole)
            on_cell(CellStats(cell, 0, len(regressions), 0.0, reach=len(reach)))
            continue
        strategy = scenario_strategy(
            cell.pool, cell.dtype, exploring.special_values, profile.pool_bytes
        )

        def check(s):
            return check_cell(
                s, cell.backend, cell.mode, candidates, options.timeout_s, _table_eras(options)
            )

        examples = examples_within(budget, per_example, floor, settings.max_examples)
        outcome = explore(
            strategy,
            check,
            has_findings,
            Settings(settings, max_examples=examples),
            options.seed,
            cell.key,
            on_pass=lambda results: [on_result(r) for r in results],
            # Draws a declared skip removes are never checks: Hypothesis draws again.
            skip=lambda s, cell=cell: _backend_skip(cell.backend, s, cell.mode),
        )
        for failure in outcome.failures:
            replay = failure.blob or "no reproduce blob"
            if not failure.replayed:
                replay += "; it did not fail again when Hypothesis replayed it (flaky)"
            for result in failure.results:
                result.reproduce = f"seed {options.seed}, {replay}"
                on_result(result)
        if outcome.skip_reason:
            # A declared skip that removed every draw removes the cell: skipped, with its reason.
            reason = f"{outcome.skip_reason} (all {outcome.rejected} draws)"
            _not_checked(cell, candidates, on_result, Outcome.SKIPPED, reason)
        elif not outcome.failures and outcome.generated == 0:
            reason = "Hypothesis drew no example for this cell"
            _not_checked(cell, candidates, on_result, Outcome.UNEXPLORED, reason)
        on_cell(
            CellStats(
                cell,
                outcome.generated,
                len(regressions),
                outcome.seconds,
                bool(outcome.failures),
                outcome.blob,
                reach=len(reach),
            )
        )
