"""The deterministic run: the builtin (or the user's) scenarios through every cell. Every planned
check yields one row: a declared skip is a SKIPPED row with its reason.
"""

from __future__ import annotations

from typing import Callable

from harness.plan.candidates import candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.report.cell_result import CellResult
from harness.run.cells import cell_candidates, cell_groups, cells_of, check_or_skip, scenarios_for


def planned_checks(options: RunOptions, suts: list[SutChoice]) -> int:
    """How many candidate rows a deterministic `run` yields: every (cell, scenario, candidate or
    skip), whatever its outcome. The era table's rows come on top."""
    total = 0
    for pool, dtype in cell_groups(options):
        scenarios = scenarios_for(pool, dtype, options)
        for cell in cells_of(options, pool, dtype):
            items = list(candidates_for(cell.backend, cell.mode, suts, options, pool, dtype))
            total += len(scenarios) * len(items)
    return total


def run(
    options: RunOptions,
    suts: list[SutChoice],
    on_result: Callable[[CellResult], None],
    on_group: Callable[[str, int, int], None] = lambda group, done, total: None,
) -> None:
    """The deterministic run: the builtin (or the user's) scenarios through every cell."""
    groups = cell_groups(options)
    for index, (pool, dtype) in enumerate(groups):
        scenarios = scenarios_for(pool, dtype, options)
        for cell in cells_of(options, pool, dtype):
            candidates = cell_candidates(cell, suts, options, scenarios, on_result)
            for scenario in scenarios:
                for result in check_or_skip(cell, scenario, candidates, options):
                    on_result(result)
        on_group(f"{pool} {dtype}", index + 1, len(groups))
