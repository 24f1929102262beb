"""Reach at the ci profile: slot ids past 2^15, 2^16 and 2^17 in every pool kind within
the profile's byte budget, the pool's top slot, page tails, slot 1, and independent k/v scales in
`--examples`; everything still shrinks to one layer, one token, slot 1."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from backends.registry import BACKENDS
from pools.dtypes import DTYPES
from pools.kinds.landing import page_interleave_row
from pools.kinds.registry import KINDS, kinds_where
from scenarios.model import DSV4_KINDS, POOL_KINDS, Geometry, Scenario
from scenarios.profiles import profile_named
from scenarios.random_defaults import random_scenarios
from scenarios.reach import reach_scenario
from scenarios.strategies import scenarios
from scenarios.strategies.geometry import _row_bytes, geometries, reach_budget
from tests.conftest import check_records, run_kvh

CI_BYTES = profile_named("ci").pool_bytes
# The kinds the fixtures' runs below reach: they go through bf16 call sites, which the DeepSeek V4
# kinds and a CPU server's quantized cache (fp8 only) have none of.
BF16_KINDS = tuple(
    pool for pool in POOL_KINDS if any(b.judges(pool, "bf16") for b in BACKENDS.values())
)
SEARCH = settings(
    max_examples=2000, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
# The first drawn example that satisfies the condition, not shrunk: for the tests that ask only
# whether the strategy draws such a scenario (and assert of it what every draw must hold).
# Shrinking a 2^17-slot scenario was 85% of such a search (38.6 s of it against 6.1 s).
FOUND = settings(SEARCH, phases=(Phase.generate,))


def pool_bytes(g: Geometry) -> int:
    return _row_bytes(g) * sum(g.rows(layer) for layer in range(g.layer_num))


def last_slot(g: Geometry) -> int:
    return g.size + g.page_size - 1


def written(scenario: Scenario) -> set[int]:
    """The slots written: on a page-interleave pool its rank's rows, whose ids are twice as high."""
    slots = {slot for forward in scenario.forwards for slot in forward.loc[: forward.tokens]}
    if scenario.geometry.kind.page_interleave:
        return {page_interleave_row(scenario.geometry, slot) for slot in slots} - {None}
    return slots


@pytest.mark.parametrize("pool", POOL_KINDS)
@pytest.mark.parametrize("reach", (2**15, 2**16, 2**17))
def test_every_pool_kind_reaches_past_each_power_of_two_within_the_ci_budget(pool, reach):
    for dtype in ("fp8_e4m3",) if pool in DSV4_KINDS else ("bf16", "fp32"):  # V4 is fp8 only
        g = find(geometries(pool, dtype, CI_BYTES), lambda g: last_slot(g) >= reach, settings=FOUND)
        assert pool_bytes(g) <= reach_budget(pool, CI_BYTES)
        assert g.layer_num <= 2


@pytest.mark.slow
# MHA and hybrid MLA stand for the draws; every kind's top slot: the pinned reach scenario below.
@pytest.mark.parametrize("pool", ("mha", "swa_mla"))
def test_the_top_slot_of_a_pool_past_2_17_is_written(pool):
    scenario = find(
        scenarios(pool, "bf16", pool_bytes=CI_BYTES),
        lambda s: last_slot(s.geometry) >= 2**17 and last_slot(s.geometry) in written(s),
        settings=FOUND,
    )
    assert max(written(scenario)) >= 2**17


@pytest.mark.slow
def test_page_tails_of_large_pages_are_written():
    scenario = find(
        scenarios("mha", "bf16", pool_bytes=CI_BYTES),
        lambda s: s.geometry.page_size == 128 and any(slot % 128 == 127 for slot in written(s)),
        settings=FOUND,
    )
    assert scenario.geometry.page_size == 128


@pytest.mark.slow
def test_the_simplest_scenario_is_one_layer_one_token_at_slot_1():
    scenario = find(
        scenarios("mha", "bf16", pool_bytes=CI_BYTES), lambda s: any(written(s)), settings=SEARCH
    )
    assert scenario.geometry.layer_num == 1 and len(scenario.forwards) == 1
    assert written(scenario) == {1}


def test_random_builtin_scenarios_draw_k_and_v_scales_independently():
    drawn = random_scenarios("mha", "bf16", seed=0, count=40)
    assert any(s.k_scale != s.v_scale for s in drawn)
    assert any(s.k_scale.kind != s.v_scale.kind for s in drawn)


def test_every_dtype_has_a_narrow_large_geometry_within_the_budget():
    for dtype in DTYPES:
        g = find(
            geometries("swa_mha", dtype, CI_BYTES), lambda g: last_slot(g) >= 2**16, settings=FOUND
        )
        assert pool_bytes(g) <= CI_BYTES


def test_a_pool_one_row_off_at_2_17_is_caught_at_ci_in_every_pool_kind(tmp_path, fixture_sut):
    """The pinned top-of-pool scenario (scenarios/reach.py) catches it whatever Hypothesis draws:
    one example per cell, and still every pool kind has a finding at slot 2^17 exactly."""
    caught = caught_in_every_kind(
        tmp_path, fixture_sut("high_slot_off_by_one"), "--profile", "ci", "--examples", "1"
    )
    assert caught.detail.str.contains("slot 131072,").all()
    records = check_records(tmp_path)
    reached = records[records.scenario.str.startswith("reach-2^17")]
    assert set(reached.pool) == set(BF16_KINDS)


def test_the_reach_scenario_writes_slot_1_2_15_2_16_2_17_and_the_last_slot_in_every_pool_kind():
    for pool in POOL_KINDS:
        for dtype in ("fp8_e4m3",) if pool in DSV4_KINDS else DTYPES:  # a V4 cache is fp8
            scenario = reach_scenario(pool, dtype, CI_BYTES, seed=0)
            slots = written(scenario)
            assert {2**15, 2**16, 2**17 - 1, 2**17, last_slot(scenario.geometry)} <= slots, (
                pool,
                dtype,
            )
            assert pool_bytes(scenario.geometry) <= reach_budget(pool, CI_BYTES)
            if scenario.geometry.page_size == 1:
                assert 1 in slots


@pytest.mark.parametrize("pool", kinds_where(lambda kind: kind.reach_floor_bytes))
def test_only_a_kind_whose_rows_cannot_narrow_passes_the_budget_and_only_to_reach_2_17(pool):
    dtype = "fp8_e4m3" if pool in DSV4_KINDS else "bf16"
    g = reach_scenario(pool, dtype, CI_BYTES, seed=0).geometry
    assert CI_BYTES < pool_bytes(g) <= KINDS[pool].reach_floor_bytes
    assert 2**17 < last_slot(g) <= 2**17 + 3 * g.page_size


@pytest.mark.parametrize(
    "fixture, slot",
    # int16 slots land at many rows (the last slot, 2^17 + 1, wraps onto slot 1): no one slot.
    (("high_slot_off_by_one", "slot 131072,"), ("int16_slots", None)),
)
def test_the_default_run_catches_a_pool_wrong_only_at_high_slots_in_every_pool_kind(
    tmp_path, fixture_sut, fixture, slot
):
    """No profile: the default set's reach scenario writes 2^15, 2^16 and 2^17 in every kind."""
    caught = caught_in_every_kind(tmp_path, fixture_sut(fixture))
    assert set(caught.scenario) == {"reach"}
    if slot is not None:
        assert caught.detail.str.contains(slot).all(), caught.detail.tolist()


def caught_in_every_kind(out, sut: str, *options: str):
    """The finding rows of `kvh run` of `sut` through plain, plain_mla, minimax_sparse, dsa, qsa
    dots3, dsv4_indexer and retraction_restore (the only call sites of the minimax_sparse,
    hisparse_dsa, qsa, swa_dsa, dsv4_indexer and minimax_m3_nvfp4 kinds) on bf16 `current` pools,
    which must exit 1 with a finding in every pool kind."""
    backends = "plain,plain_mla,minimax_sparse,dsa,qsa,dots3,dsv4_indexer,retraction_restore"
    result = run_kvh(
        "run",
        *("--sut", sut, "--backend", backends, "--dtype", "bf16", "--era", "current"),
        *options,
        *("--out", str(out)),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    records = check_records(out)
    caught = records[records.outcome == "finding"]
    assert set(caught.pool) == set(BF16_KINDS)
    return caught
