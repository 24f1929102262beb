"""Do two bench runs agree? Per cell, the medians of two runs against each run's reported CV.

A cell agrees when the two medians differ by no more than either run's spread: |m2 - m1| is at
most cv1 * m1 and at most cv2 * m2. The same test with mad_cv, which a few slow samples cannot
inflate, is the stricter one and is reported beside it. Only measured cells that both runs have
are compared. This
is how `kvh bench` judges a run against the previous one in the same --out folder; a
disagreement is reported, not failed on: noise on a shared machine is not a finding.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reports.markdown import markdown_table
from reports.outcome import Outcome

# A cell of `kvh bench`: every axis it expands, and the cache state.
BENCH_CELL = (
    "backend",
    "mode",
    "pool",
    "dtype",
    "sut",
    "engine",
    "era",
    "tokens",
    "layers",
    "cache",
)


def previous_bench_rows(out: Path) -> pd.DataFrame:
    """The newest bench run already in `out` (its files are named bench-<run id>-...), or empty."""
    files = sorted(Path(out).glob("bench-*.parquet"))
    if not files:
        return pd.DataFrame()
    try:
        return pd.read_parquet(files[-1])
    except Exception:  # an unreadable file is no baseline, never a crash
        return pd.DataFrame()


def agreement(previous: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """One row per measured cell in both runs: both medians, cvs and mad_cvs, the relative
    difference, and whether it lies within both runs' cv (`agree`) and mad_cv (`agree_mad`)."""
    columns = [*BENCH_CELL, "median_ns", "cv", "mad_cv"]
    if previous.empty or current.empty:
        return pd.DataFrame(
            columns=[
                *BENCH_CELL,
                "median_ns_previous",
                "cv_previous",
                "mad_cv_previous",
                "median_ns",
                "cv",
                "mad_cv",
                "relative_difference",
                "agree",
                "agree_mad",
            ]
        )

    def measured(frame: pd.DataFrame) -> pd.DataFrame:
        # reindex: a run written before mad_cv existed compares with NaN there, i.e. never agrees
        return (
            frame.loc[frame["outcome"] == Outcome.MEASURED]
            .reindex(columns=columns)
            .astype({"cache": str})
        )

    both = measured(previous).merge(
        measured(current), on=list(BENCH_CELL), suffixes=("_previous", "")
    )
    difference = (both["median_ns"] - both["median_ns_previous"]).abs()
    both["relative_difference"] = difference / both["median_ns_previous"]
    for verdict, spread in (("agree", "cv"), ("agree_mad", "mad_cv")):
        both[verdict] = (difference <= both[f"{spread}_previous"] * both["median_ns_previous"]) & (
            difference <= both[spread] * both["median_ns"]
        )
    return both


def _yes(agreed: bool) -> str:
    return "yes" if agreed else "NO"


def agreement_markdown(table: pd.DataFrame, previous_run: str) -> str:
    rows = pd.DataFrame(
        {
            "pool": table["pool"],
            "dtype": table["dtype"],
            "tokens": table["tokens"],
            "layers": table["layers"],
            "sut/era/engine": table["sut"] + "/" + table["era"] + "/" + table["engine"],
            "cache": table["cache"],
            "previous us": (table["median_ns_previous"] / 1e3).map("{:.1f}".format),
            "this us": (table["median_ns"] / 1e3).map("{:.1f}".format),
            "difference": table["relative_difference"].map("{:.1%}".format),
            "cv previous, this": [
                f"{a:.3f}, {b:.3f}" for a, b in zip(table["cv_previous"], table["cv"])
            ],
            "mad_cv previous, this": [
                f"{a:.3f}, {b:.3f}" for a, b in zip(table["mad_cv_previous"], table["mad_cv"])
            ],
            "within cv": table["agree"].map(_yes),
            "within mad_cv": table["agree_mad"].map(_yes),
        }
    )
    head = (
        f"Against the previous run {previous_run}: {int(table['agree'].sum())} of {len(table)} "
        f"cells agree within both runs' cv, {int(table['agree_mad'].sum())} within both runs' "
        "mad_cv"
    )
    return f"{head}\n\n{markdown_table(rows)}\n"
