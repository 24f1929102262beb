"""Every cell is explored: an equal share of the run's budget fixed up front, and a floor of
examples that no budget takes away; a cell that still draws nothing is UNEXPLORED."""

from __future__ import annotations

from hypothesis import strategies as st

from harness.runner import cell_budget
from scenarios.explore import MAX_REJECTED, explore
from scenarios.profiles import PROFILES, profile_named


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
    drawn = []
    outcome = explore(
        st.integers(0, 10),
        drawn.append,
        lambda _: False,
        profile_named("ci").settings(max_examples=12),
        seed=0,
        key="floor",
        budget_s=0.0,
        min_examples=3,
    )
    assert outcome.generated == 3 and len(drawn) == 3


def test_without_a_floor_a_spent_budget_draws_nothing():
    outcome = explore(
        st.integers(0, 10),
        lambda _: None,
        lambda _: False,
        profile_named("ci").settings(max_examples=12),
        seed=0,
        key="no-floor",
        budget_s=0.0,
    )
    assert outcome.generated == 0


def test_every_time_limited_profile_has_a_floor():
    assert all(profile.min_examples >= 1 for profile in PROFILES.values() if profile.run_seconds)


def test_a_cell_whose_every_draw_is_skipped_stops_early_and_says_why():
    outcome = explore(
        st.integers(0, 10**9),
        lambda _: None,
        lambda _: False,
        profile_named("ci").settings(max_examples=12),
        seed=0,
        key="all-skipped",
        min_examples=3,
        skip=lambda _: "decode on fp8 caches",
    )
    assert outcome.generated == 0 and outcome.rejected == MAX_REJECTED
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
