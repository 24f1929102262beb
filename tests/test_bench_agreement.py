"""Two bench runs agree cell by cell when their medians differ by less than both runs' spread."""

from __future__ import annotations

import pandas as pd

from harness.cli import main
from reports.bench_agreement import BENCH_CELL, agreement, agreement_markdown, previous_bench_rows

CELL = {
    "backend": "plain",
    "mode": "extend",
    "pool": "mha",
    "dtype": "bf16",
    "sut": "builtin",
    "engine": "torch",
    "layers": 1,
    "cache": "warm",
}


def _run(*cells: dict) -> pd.DataFrame:
    return pd.DataFrame([{**CELL, "outcome": "measured", **cell} for cell in cells])


def test_cells_agree_within_both_runs_spread_and_unmatched_cells_are_left_out() -> None:
    previous = _run(
        {"era": "legacy", "tokens": 1, "median_ns": 100.0, "cv": 0.10, "mad_cv": 0.02},
        {"era": "current", "tokens": 1, "median_ns": 100.0, "cv": 0.10, "mad_cv": 0.10},
        {"era": "legacy", "tokens": 16, "median_ns": 100.0, "cv": 0.5, "mad_cv": 0.5},
        {"era": "current", "tokens": 16, "median_ns": 100.0, "cv": 0.5, "mad_cv": 0.5},
    )
    current = _run(
        {"era": "legacy", "tokens": 1, "median_ns": 105.0, "cv": 0.10, "mad_cv": 0.10},
        {"era": "current", "tokens": 1, "median_ns": 130.0, "cv": 0.40, "mad_cv": 0.40},
        {
            "era": "legacy",
            "tokens": 16,
            "outcome": "error",
            "median_ns": None,
            "cv": None,
            "mad_cv": None,
        },
        {"era": "current", "tokens": 4096, "median_ns": 1.0, "cv": 0.1, "mad_cv": 0.1},
    )
    table = agreement(previous, current).set_index(["era", "tokens"])
    assert sorted(table.index) == [("current", 1), ("legacy", 1)]  # measured in both runs only
    legacy, current_era = table.loc[("legacy", 1)], table.loc[("current", 1)]
    assert legacy["relative_difference"] == 0.05
    assert legacy["agree"] and not legacy["agree_mad"]  # 5% > the previous run's mad_cv 2%
    assert not current_era["agree"]  # 30% > the previous run's cv 10%
    text = agreement_markdown(agreement(previous, current), "RUN")
    assert "1 of 2 cells agree within both runs' cv, 0 within both runs' mad_cv" in text


def test_no_previous_run_gives_an_empty_table(tmp_path) -> None:
    assert previous_bench_rows(tmp_path).empty
    table = agreement(
        pd.DataFrame(),
        _run({"era": "legacy", "tokens": 1, "median_ns": 1.0, "cv": 0.1, "mad_cv": 0.1}),
    )
    assert table.empty and set(BENCH_CELL) <= set(table.columns)


def test_a_second_bench_run_in_one_folder_is_compared_with_the_first(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    arguments = [
        "bench",
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--era",
        "legacy",
        "--engine",
        "torch",
        "--tokens",
        "16",
        "--min-time",
        "0.002",
        "--passes",
        "2",
        "--out",
        str(out),
    ]
    assert main(arguments) == 0
    assert "Against the previous run" not in (out / "bench.md").read_text()
    first_run = previous_bench_rows(out)["run_id"].iloc[0]
    assert main(arguments) == 0
    text = (out / "bench.md").read_text()
    assert f"Against the previous run {first_run}: " in text and " of 1 cells agree" in text
    assert "Against the previous run" in capsys.readouterr().out
