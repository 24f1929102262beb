"""Every cell is explored: an equal share of the run's budget fixed up front, and a floor of
examples that no budget takes away; a cell that still draws nothing is UNEXPLORED, and one a
declared skip removes whole is SKIPPED before any draw."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from backends.registry import BACKENDS
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.run.exploring import Exploring, cell_budget, explore_run
from pools.dtypes import DTYPES
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios
from scenarios.explore import MAX_REJECTED, examples_within, explore
from scenarios.model import BASE_POOL_KINDS
from scenarios.profiles import PROFILES, profile_named
from scenarios.reach import reach_scenario
from scenarios.regressions import regression_scenarios


def test_an_early_cell_that_overran_leaves_later_cells_their_full_share():
    share = 200.0 / 100
    # The first 10 cells spent the whole budget: cell 10 still gets its share.
    assert cell_budget(200.0, 100, spent=200.0, index=10) == share
    assert cell_budget(200.0, 100, spent=400.0, index=99) == share


def test_time_left_over_by_early_cells_goes_to_the_later_ones():
    assert cell_budget(200.0, 100, spent=0.0, index=50) == 200.0 / 50


def test_a_profile_without_a_time_budget_sets_no_limit():
    assert cell_budget(None, 10, spent=5.0, index=3) is None


def test_a_spent_budget_still_draws_the_floor_of_examples():
    assert examples_within(0.0, 0.5, floor=3, most=12) == 3
    drawn = []
    outcome = explore(
        st.integers(0, 10),
        drawn.append,
        lambda _: False,
        profile_named("ci").settings(max_examples=examples_within(0.0, 0.5, 3, 12)),
        seed=0,
        key="floor",
    )
    assert outcome.generated == 3 and len(drawn) == 3


def test_the_budget_buys_the_examples_it_holds_at_the_measured_cost():
    assert examples_within(2.0, 0.25, floor=3, most=12) == 8
    assert examples_within(100.0, 0.25, floor=3, most=12) == 12
    assert examples_within(None, 9.0, floor=3, most=12) == 12
    assert examples_within(0.0, 0.5, floor=0, most=12) == 0
    assert examples_within(1.0, 0.0, floor=3, most=12) == 12


def test_every_time_limited_profile_has_a_floor():
    assert all(profile.min_examples >= 1 for profile in PROFILES.values() if profile.run_seconds)


def _examples_per_cell(profile) -> list[int]:
    cells: list = []
    explore_run(
        RunOptions(pools=["mha"], dtypes=["bf16"], backends=["plain"]),
        [SutChoice("builtin", ("torch",))],
        Exploring(profile, max_examples=5),
        lambda result: None,
        cells.append,
    )
    return [stats.examples for stats in cells]


def test_a_profile_of_fixed_examples_draws_them_all_whatever_the_clock_says():
    """ci's rows are the same on every machine: no budget, however spent, cuts a cell short."""
    assert profile_named("ci").fixed_examples
    spent = replace(profile_named("ci"), run_seconds=0.0)
    assert _examples_per_cell(spent) and set(_examples_per_cell(spent)) == {5}
    cut = replace(spent, fixed_examples=False)  # the same budget cuts a profile that does not fix
    assert set(_examples_per_cell(cut)) == {spent.min_examples}


def test_a_cell_whose_every_draw_is_skipped_stops_early_and_says_why():
    checked = []
    outcome = explore(
        st.integers(0, 10**9),
        checked.append,
        lambda _: False,
        profile_named("ci").settings(max_examples=12),
        seed=0,
        key="all-skipped",
        skip=lambda _: "decode on fp8 caches",
    )
    assert outcome.generated == 0 and outcome.rejected == MAX_REJECTED and not checked
    assert outcome.skip_reason == "decode on fp8 caches"


def test_skipped_draws_are_not_checks_and_the_rest_are():
    checked = []
    explore(
        st.integers(0, 10),
        checked.append,
        lambda _: False,
        profile_named("ci").settings(max_examples=12),
        seed=0,
        key="some-skipped",
        skip=lambda n: "odd" if n % 2 else None,
    )
    assert checked and all(n % 2 == 0 for n in checked)


def test_a_cell_a_by_cell_skip_removes_draws_no_scenario_and_says_why():
    options = RunOptions(pools=["mha"], dtypes=["fp8_e4m3"], backends=["intel_amx"])
    rows, cells = [], []
    explore_run(
        options,
        [SutChoice("builtin", ("torch",))],
        Exploring(profile_named("ci"), max_examples=1),
        rows.append,
        cells.append,
    )
    decode = next(stats for stats in cells if stats.cell.mode == "decode")
    assert decode.examples == 0 and decode.seconds == 0.0 and decode.reach == 1
    whole = [r for r in rows if r.scenario is None and r.candidate.mode == "decode"]
    assert whole and all(r.outcome is Outcome.SKIPPED for r in whole)
    assert all("decode-kernel-fp8" in r.skip.reason for r in whole)
    assert all("every scenario of the cell" in r.skip.reason for r in whole)


def _cell_scenarios(pool: str, dtype: str) -> list:
    builtin = default_scenarios(pool, dtype, 0) if pool in BASE_POOL_KINDS else []
    return [
        *builtin,
        *regression_scenarios(pool, dtype),
        reach_scenario(pool, dtype, profile_named("ci").pool_bytes, 0),
    ]


def test_every_by_cell_skip_holds_for_all_or_none_of_a_cells_scenarios():
    """A by_cell predicate is declared to read only pool kind, dtype and mode: on the builtin,
    regression and reach scenarios of each cell it is all true or all false."""
    checked = 0
    for backend in BACKENDS.values():
        for skip in (s for s in backend.skips if s.by_cell):
            for pool in backend.pool_kinds:
                for dtype in DTYPES:
                    scenarios = _cell_scenarios(pool, dtype)
                    for mode in backend.modes:
                        verdicts = {skip.applies(s, mode) for s in scenarios}
                        assert len(verdicts) == 1, (backend.name, skip.name, pool, dtype, mode)
                        checked += 1
    assert checked > 50


def test_a_fixed_profile_that_ran_past_its_size_says_so_and_one_within_it_does_not():
    import pandas as pd

    from harness.report.exploration_log import exploration_markdown

    cell = dict(backend="plain", pool="mha", examples=12, regressions=1, reach=1, seconds=250.0)
    over = exploration_markdown(pd.DataFrame([cell]), "ci", 0)
    assert "ci is sized for 200s of exploration" in over and "rather than checking less" in over
    within = exploration_markdown(pd.DataFrame([{**cell, "seconds": 20.0}]), "ci", 0)
    cut = exploration_markdown(pd.DataFrame([cell]), "dev", 0)  # dev's budget cuts: nothing to say
    assert "sized for" not in within and "sized for" not in cut
