"""One scenario through one cell: the baselines of every era the cell needs, each candidate
judged against its own era's run (harness/compare/verdict.py decides), and the era table's
rows. Also the cells of a run and what skips them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional

from backends.registry import Backend, backend_named
from backends.skips import BackendSkip
from harness.compare.snapshot import Execution
from harness.compare.verdict import Baselines, Verdict, with_release_trail
from harness.plan.baseline import baseline_for
from harness.plan.candidate import Candidate
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sharding import in_shard
from harness.plan.sut_choice import SutChoice
from harness.report.cell_result import ERA_TABLE_SUT, CellResult
from harness.run.baselines import decide, run_baselines
from harness.run.execute import execute
from harness.sut.worker.client import WorkerFailure
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios
from scenarios.model import Scenario
from scenarios.random_defaults import random_scenarios

if TYPE_CHECKING:
    from harness.sut.worker.client import Submitted


def scenarios_for(pool: str, dtype: str, options: RunOptions) -> list[Scenario]:
    if options.scenarios is not None:
        return [
            s for s in options.scenarios if (s.geometry.pool, s.geometry.dtype) == (pool, dtype)
        ]
    return default_scenarios(pool, dtype, options.seed) + random_scenarios(
        pool, dtype, options.seed, options.examples
    )


WORKER_TIMEOUT_S = 60.0  # a worker's limit per scenario where the run gives none


def submit_candidate(
    candidate: Candidate, scenario: Scenario, timeout_s: Optional[float]
) -> Submitted:
    """Send a worker candidate's request; its worker runs it while this process goes on."""
    return _ask_worker(candidate.module.submit, candidate, scenario, timeout_s)


def _ask_worker(
    request: Callable, candidate: Candidate, scenario: Scenario, timeout_s: Optional[float]
) -> Any:
    """One request of a worker candidate's SUT (IsolatedSut.submit or .trail) for `scenario`."""
    return request(
        scenario,
        candidate.backend,
        candidate.mode,
        candidate.device,
        timeout_s=timeout_s or WORKER_TIMEOUT_S,
        era=candidate.era,
    )


def worker_result(candidate: Candidate, submitted: Submitted, baseline: Execution) -> Execution:
    """A submitted request's execution (only the buffers whose bytes differ from the
    `baseline` run's travel back), as the candidate's backend's."""
    execution = submitted.result(known=baseline)
    execution.backend = candidate.backend
    return execution


def execute_candidate(
    candidate: Candidate,
    scenario: Scenario,
    baseline: Execution,
    timeout_s: Optional[float],
    backend: Backend,
) -> Execution:
    """In this process, or in the SUT's own worker process."""
    if candidate.in_worker:
        return worker_result(candidate, submit_candidate(candidate, scenario, timeout_s), baseline)
    return execute(candidate, scenario, timeout_s, backend)


def release_trail(
    candidate: Candidate, scenario: Scenario, timeout_s: Optional[float], backend: Backend
) -> tuple[str, ...]:
    """The release functions a foreign candidate's writes of `scenario` run, recorded by running
    them once more under a trace (harness/run/release_trail.py); () where that run fails."""
    if candidate.in_worker:
        try:
            return _ask_worker(candidate.module.trail, candidate, scenario, timeout_s)
        except WorkerFailure:
            return ()
    return execute(candidate, scenario, timeout_s, backend, trail=True).release_trail


def _candidate_row(
    candidate: Candidate,
    scenario: Scenario,
    verdict: Verdict,
    write_ns: int,
    release_trail: tuple[str, ...] = (),
) -> CellResult:
    skip = Skip.of(candidate, verdict.skip_reason) if verdict.outcome is Outcome.SKIPPED else None
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
        release_trail=release_trail,
    )


def era_rows(baselines: Baselines, backend: Backend) -> list[CellResult]:
    """The era table's rows for one scenario: each era other than the ground truth's."""
    rows = []
    for era, verdict in baselines.eras.items():
        if era == baselines.ground and verdict.outcome is not Outcome.FINDING:
            continue
        baseline = baseline_for(backend, baselines.mode, era)
        subject = Candidate(
            ERA_TABLE_SUT,
            baseline.module,
            era,
            baseline.engine,
            baseline.device,
            baseline.backend,
            baseline.mode,
        )
        against = (
            "its own untouched slots"
            if era == baselines.ground
            else f"the ground truth ({baselines.ground})"
        )
        label = f"{subject.label}: era {era} against {against}"
        rows.append(
            CellResult(
                None,
                baselines.scenario,
                verdict.outcome,
                [finding.for_candidate(label) for finding in verdict.findings],
                verdict.divergences,
                label=label,
                # An era whose behaviour here is undefined (harness/compare/verdict.py undefined).
                skip=Skip.of(subject, verdict.skip_reason)
                if verdict.outcome is Outcome.SKIPPED
                else None,
                era_baseline=subject,
            )
        )
    return rows


def eras_needed(
    backend: Backend, candidates: Iterable[Candidate], table_eras: Iterable[str]
) -> list[str]:
    """The call sites whose baseline runs a cell needs: the candidates' eras, and the eras of the
    era table (the ground truth's comes with them: harness.run.baselines.run_baselines)."""
    wanted = {c.era for c in candidates} | set(table_eras)
    return [era for era in backend.eras if era in wanted]


def check_cell(
    scenario: Scenario,
    backend: Backend,
    mode: str,
    candidates: list[Candidate],
    timeout_s: Optional[float],
    table_eras: Optional[Iterable[str]] = None,
    trail_every: bool = False,
) -> list[CellResult]:
    """One scenario through one cell: the candidates' rows, then the era table's rows for
    `table_eras` (default: all of the backend's). `trail_every`: record the release functions
    of every foreign candidate's writes, not only of one with findings (RunOptions.trail)."""
    eras = eras_needed(backend, candidates, backend.eras if table_eras is None else table_eras)
    # A candidate in a SUT worker runs there while this process runs the baselines, so on two
    # cores isolating a SUT costs little more than its own writes (one request per worker).
    submitted = {}
    for index, candidate in enumerate(candidates):
        if candidate.in_worker and all(
            candidates[other].module is not candidate.module for other in submitted
        ):
            submitted[index] = submit_candidate(candidate, scenario, timeout_s)
    try:
        baselines = run_baselines(scenario, backend, mode, eras, timeout_s)
    except BaseException:
        for request in submitted.values():
            request.abandon()
        raise
    results = []
    for index, candidate in enumerate(candidates):
        if index in submitted:
            execution = worker_result(candidate, submitted[index], baselines.runs[candidate.era])
        else:
            execution = execute_candidate(
                candidate, scenario, baselines.runs[candidate.era], timeout_s, backend
            )
        verdict = decide(baselines, candidate, execution)
        trail: tuple[str, ...] = ()
        if candidate.foreign and (verdict.findings or trail_every):  # where to look
            trail = release_trail(candidate, scenario, timeout_s, backend)
            verdict = with_release_trail(verdict, trail)
        results.append(_candidate_row(candidate, scenario, verdict, execution.write_ns, trail))
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
    themselves are harness.plan.baseline.baseline_module's. `backend` is the cell's call-site
    entry: by default the registry's, in a mutant run the mutant's table's
    (RunOptions.backend_table)."""
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
        if backend.judges(pool, dtype):  # a combination that cannot apply is never planned
            for mode in backend.modes:
                cell = Cell(pool, dtype, backend, mode)
                if in_shard(cell.key, options.shard):
                    yield cell


def backend_skip(backend: Backend, scenario: Scenario, mode: str) -> Optional[str]:
    """`name: reason` of the declared skip (or out-of-focus) that removes this check, if any."""
    skip = backend.skip_for(scenario, mode)
    return None if skip is None else skip_reason(skip)


def skip_reason(skip: BackendSkip) -> str:
    return f"{skip.name}: {skip.reason}"


def whole_cell_skip(cell: Cell, scenario: Scenario) -> Optional[str]:
    """`name: reason (...)` of a declared skip that removes every scenario of the cell: one whose
    predicate reads only the pool kind, dtype and mode (backends/skips.py by_cell), holding for
    `scenario`, one of the cell's."""
    for skip in cell.backend.skips:
        if skip.by_cell and skip.applies(scenario, cell.mode):
            return f"{skip.name}: {skip.reason} (every scenario of the cell)"
    return None


def cell_candidates(
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
                on_result(CellResult(None, scenario, Outcome.SKIPPED, skip=item, label=item.label))
    return candidates


def _skipped_rows(
    candidates: list[Candidate], scenario: Scenario, skip: BackendSkip
) -> list[CellResult]:
    """A declared backend skip removes the check for every candidate of the cell: one row each,
    of the skip's kind (a trim by design is not counted as a check)."""
    return [
        CellResult(
            c,
            scenario,
            Outcome.SKIPPED,
            label=c.label,
            skip=Skip.of(c, skip_reason(skip), skip.kind),
        )
        for c in candidates
    ]


def table_eras(options: RunOptions) -> tuple[str, ...]:
    return tuple(options.eras) if options.era_table else ()


def check_or_skip(
    cell: Cell, scenario: Scenario, candidates: list[Candidate], options: RunOptions
) -> list[CellResult]:
    skip = cell.backend.skip_for(scenario, cell.mode)
    if skip is not None:
        return _skipped_rows(candidates, scenario, skip)
    return check_cell(
        scenario, cell.backend, cell.mode, candidates, options.timeout_s, table_eras(options),
        options.trail,
    )  # fmt: skip


def cell_groups(options: RunOptions) -> list[tuple[str, str]]:
    if options.scenarios is not None:
        return list(dict.fromkeys((s.geometry.pool, s.geometry.dtype) for s in options.scenarios))
    return [(pool, dtype) for pool in options.pools for dtype in options.dtypes]


def planned_cells(options: RunOptions) -> list[Cell]:
    """Every cell of the run (of its shard), in the order a run checks them."""
    return [cell for pool, dtype in cell_groups(options) for cell in cells_of(options, pool, dtype)]


def has_findings(results: list[CellResult]) -> bool:
    return any(result.outcome is Outcome.FINDING for result in results)
