"""The exploring run (`kvh run --profile`): per cell the named regressions and the pinned
top-of-pool scenario, then Hypothesis examples (scenarios/explore.py), each failure shrunk;
a cell exploration gave no example is UNEXPLORED, never a silent pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from hypothesis import settings as Settings

from harness.plan.candidate import Candidate
from harness.plan.candidates import Skip
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.report.cell_result import CellResult
from harness.run.cells import (
    Cell,
    backend_skip,
    cell_candidates,
    cell_groups,
    cells_of,
    check_cell,
    check_or_skip,
    has_findings,
    table_eras,
    whole_cell_skip,
)
from reports.outcome import Outcome
from scenarios.explore import examples_within, explore
from scenarios.profiles import Profile
from scenarios.reach import reach_scenario
from scenarios.regressions import regression_scenarios
from scenarios.strategies import scenarios as scenario_strategy
from scenarios.strategies.dcp import dcp_ranks, pinned_dcp_rank


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
    shrink: bool = True  # --no-shrink: each failure as drawn


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
                skip=Skip.of(candidate, reason),
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
    profile's min_examples (a profile of fixed examples: all of them, whatever the clock); a cell
    that still drew none (every draw skipped) is UNEXPLORED, never a silent pass."""
    profile = exploring.profile
    settings = profile.settings(exploring.max_examples, exploring.database_dir, exploring.shrink)
    floor = min(profile.min_examples, settings.max_examples)
    cells = [
        cell for pool, dtype in cell_groups(options) for cell in cells_of(options, pool, dtype)
    ]
    started = time.monotonic()
    for index, cell in enumerate(cells):
        budget = (
            None
            if profile.fixed_examples
            else cell_budget(profile.run_seconds, len(cells), time.monotonic() - started, index)
        )
        regressions = regression_scenarios(cell.pool, cell.dtype)
        reach = [reach_scenario(cell.pool, cell.dtype, profile.pool_bytes, options.seed)]
        if cell.backend.writes_dcp_rank:  # its only scenarios are a DCP rank's
            reach = [pinned_dcp_rank(scenario) for scenario in reach]
        pinned = regressions + reach
        candidates = cell_candidates(cell, suts, options, pinned, on_result)
        pinned_started = time.monotonic()
        for scenario in pinned:
            for result in check_or_skip(cell, scenario, candidates, options):
                on_result(result)
        per_example = (time.monotonic() - pinned_started) / len(pinned)
        whole = whole_cell_skip(cell, pinned[-1])
        if whole is not None:
            _not_checked(cell, candidates, on_result, Outcome.SKIPPED, whole)
            on_cell(CellStats(cell, 0, len(regressions), 0.0, reach=len(reach)))
            continue
        strategy = scenario_strategy(
            cell.pool, cell.dtype, exploring.special_values, profile.pool_bytes
        )
        if cell.backend.writes_dcp_rank:  # its only scenarios are a DCP rank's
            strategy = dcp_ranks(strategy)

        def check(s):
            return check_cell(
                s, cell.backend, cell.mode, candidates, options.timeout_s, table_eras(options)
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
            skip=lambda s, cell=cell: backend_skip(cell.backend, s, cell.mode),
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
