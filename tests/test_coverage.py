"""The coverage table: features of the scenarios a cell checked, as Markdown."""

from __future__ import annotations

from harness.coverage import FEATURES, Coverage, max_slot_bucket
from scenarios.model import Forward, Geometry, Scale, Scenario

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
    } <= row["features"]
    assert "slot 1" not in row["features"] and "cross-attention" not in row["features"]
    assert row["scales"] == {"float", "tensor"}


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
