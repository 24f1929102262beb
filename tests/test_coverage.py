"""The coverage table: features of the scenarios a cell checked, as Markdown and as `coverage`
records of the results store."""

from __future__ import annotations

from harness.report.coverage import FEATURES, Coverage, max_slot_bucket
from reports.records import records_frame
from reports.schema import KINDS, validate_row
from reports.store import append, load, run_meta
from scenarios.model import SCALE_KINDS, Forward, Geometry, Scale, Scenario
from scenarios.reach import reach_scenario
from tests.conftest import scenario_named

CELL = ("mha", "bf16", "plain", "extend")


def scenario(loc: list[int], **fields) -> Scenario:
    g = Geometry(
        pool="mha", dtype="bf16", size=32, page_size=16, layer_num=1, head_num=1, head_dim=32
    )
    return Scenario(
        geometry=g, forwards=[Forward(loc, narrow=fields.pop("narrow", None))], seed=0, **fields
    )


def test_max_slot_is_bucketed_by_power_of_two():
    assert [max_slot_bucket(slot) for slot in (0, 1, 2**17 - 1, 2**17)] == [
        "-",
        ">=2^0",
        ">=2^16",
        ">=2^17",
    ]


def test_features_come_from_the_scenarios_checked():
    coverage = Coverage()
    coverage.add(
        CELL,
        scenario(
            [47, 0],
            narrow=1,
            loc_dtype="int32",
            k_scale=Scale("float", 0.5),
            v_scale=Scale("tensor", 2.0),
        ),
    )
    row = coverage.cells[CELL]
    assert row["max_slot"] == 47
    assert {
        "last slot",
        "page tail",
        "padding",
        "narrowing",
        "int32 locs",
        "k_scale != v_scale",
        "head_dim % 64",
    } <= set(row["features"])
    assert "slot 1" not in row["features"] and "cross-attention" not in row["features"]
    assert set(row["scales"]) == {"float", "tensor"}


def test_one_scenario_seen_by_several_candidates_counts_once():
    coverage, checked = Coverage(), scenario([17])
    coverage.add(CELL, checked)
    coverage.add(CELL, checked)
    assert coverage.cells[CELL]["scenarios"] == 1


def test_the_table_has_a_column_per_feature():
    coverage = Coverage()
    coverage.add(CELL, scenario([1]))
    table = coverage.markdown()
    assert all(name in table for name in FEATURES) and ">=2^0" in table


def two_checked() -> Coverage:
    """`prefill` (max slot 255, a page tail) and `padded-narrowed` (padding, narrowing) in CELL."""
    coverage = Coverage()
    for name in ("prefill", "padded-narrowed"):
        coverage.add(CELL, scenario_named("mha", "bf16", name))
    return coverage


def test_rows_count_the_scenarios_that_exercised_each_feature():
    rows = two_checked().rows()
    assert all(validate_row("coverage", row) is row for row in rows)
    by_feature = {row["feature"]: row for row in rows}
    assert list(by_feature) == [*FEATURES, *(f"scale {kind}" for kind in SCALE_KINDS)]
    counts = {feature: row["scenarios"] for feature, row in by_feature.items()}
    assert (counts["page tail"], counts["padding"], counts["narrowing"]) == (1, 1, 1)
    assert (counts["slot 1"], counts["cross-attention"], counts["scale float"]) == (0, 0, 0)
    assert counts["scale none"] == 2
    assert {(row["checked"], row["max_slot"], row["max_slot_bucket"]) for row in rows} == {
        (2, 255, ">=2^7")
    }
    assert {tuple(row[c] for c in ("pool", "dtype", "backend", "mode")) for row in rows} == {CELL}


def test_coverage_records_round_trip_through_the_store(tmp_path):
    rows = two_checked().rows()
    meta = run_meta("cpu", seed=5, profile="ci")
    append(tmp_path, records_frame("coverage", rows), "coverage", meta)
    store = load(tmp_path)
    stored = store.of("coverage")
    assert store.warnings == [] and set(KINDS["coverage"].columns) <= set(stored.columns)
    columns = list(KINDS["coverage"].columns)
    assert stored[columns].to_dict("records") == rows
    assert set(stored["run_id"]) == {meta["run_id"]} and set(stored["kind"]) == {"coverage"}


def test_loc_views_shared_storage_remaps_and_value_kinds_are_features():
    from dataclasses import replace

    from scenarios.model import Remap

    scenario = scenario_named("mha", "bf16", "prefill")
    first = scenario.forwards[0]
    plain = {name for name, exercised in FEATURES.items() if exercised(scenario)}
    assert not {"loc view", "shared loc storage", "remap", "extreme/special values"} & plain
    viewed = replace(first, loc_storage=0)
    remapped = replace(first, remap=Remap(updates=[], in_place=True))
    both = replace(scenario, forwards=[viewed, replace(viewed, remap=remapped.remap)])
    hit = {name for name, exercised in FEATURES.items() if exercised(both)}
    assert {"loc view", "shared loc storage", "remap"} <= hit
    assert FEATURES["extreme/special values"](replace(scenario, values="extreme"))


def test_a_feature_the_pool_kind_cannot_exercise_is_na_with_its_reason():
    coverage = Coverage()
    scenario = reach_scenario("mha_aiter5d", "bf16", 5 * 2**20, seed=0)
    coverage.add(("mha_aiter5d", "bf16", "plain", "extend"), scenario)
    table = coverage.markdown()
    assert "| n/a" in table and "page 0 is the padding sink" in table
