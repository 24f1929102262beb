"""The dashboard's coverage section: the newest run's scenario-feature coverage, one row per
cell, features as columns (n/a where the pool kind can never exercise one)."""

from __future__ import annotations

from html import escape
from typing import Any

import pandas as pd

COVERAGE_CELL = ("pool", "dtype", "backend", "mode")


def html_value(value: Any) -> str:
    """A table cell's text: NaN blank, floats to four figures, everything escaped."""
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return escape("" if value is None else str(value))


def newest_coverage(coverage: pd.DataFrame) -> pd.DataFrame:
    """The coverage rows of the newest run that recorded any, one per (cell, feature): rows of
    several writers of that run add up."""
    if coverage.empty:
        return coverage
    ordered = coverage.sort_values("time", kind="stable", na_position="first")
    run = ordered[ordered["run_id"] == ordered["run_id"].iloc[-1]]
    if "unreachable" not in run:  # a store written before the column existed
        run = run.assign(unreachable="")
    return (
        run.assign(unreachable=run["unreachable"].fillna(""))
        .sort_values("max_slot", kind="stable", na_position="first")
        .groupby([*COVERAGE_CELL, "feature"], sort=False, dropna=False)
        .agg(
            run_id=("run_id", "last"),
            time=("time", "last"),
            scenarios=("scenarios", "sum"),
            checked=("checked", "sum"),
            max_slot=("max_slot", "last"),
            max_slot_bucket=("max_slot_bucket", "last"),
            unreachable=("unreachable", "last"),
        )
        .reset_index()
    )


def _unreachable(group: pd.DataFrame) -> dict[str, str]:
    """feature -> why the cell's pool kind can never exercise it."""
    reasons = group["unreachable"]
    return dict(zip(group.loc[reasons != "", "feature"], reasons[reasons != ""]))


def never_exercised(rows: pd.DataFrame) -> list[str]:
    """The features that no checked scenario exercised in any cell whose pool kind can, in the
    rows' order: what a run claims to cover and did not (the summary and the dashboard say it)."""
    reachable = rows[rows["unreachable"].fillna("") == ""]
    counts = reachable.groupby("feature", sort=False)["scenarios"].sum()
    return [str(feature) for feature, count in counts.items() if count == 0]


def coverage_section(coverage: pd.DataFrame) -> str:
    """Features as columns, one row per cell: how many checked scenarios exercised each."""
    rows = newest_coverage(coverage)
    if rows.empty:
        return (
            '<p class="empty">No coverage recorded for this run (<code>kvh run</code> records it '
            "next to its checks).</p>"
        )
    features = list(pd.unique(rows["feature"]))
    body = []
    for cell, group in rows.groupby(list(COVERAGE_CELL), sort=True, dropna=False):
        counts = dict(zip(group["feature"], group["scenarios"]))
        unreachable = _unreachable(group)
        tds = [f"<td>{html_value(value)}</td>" for value in cell]
        tds += [f"<td>{html_value(group[c].iloc[0])}</td>" for c in ("checked", "max_slot_bucket")]
        tds += [
            f'<td class="covered">{int(counts[f])}</td>'
            if counts.get(f, 0) > 0
            else f'<td title="{escape(unreachable[f])}">n/a</td>'
            if f in unreachable
            else '<td class="uncovered" title="not exercised">&mdash;</td>'
            for f in features
        ]
        body.append(f"<tr>{''.join(tds)}</tr>")
    # Feature names stand on end, so some thirty columns fit the page's width.
    head = "".join(f"<th>{escape(h)}</th>" for h in [*COVERAGE_CELL, "checked", "max slot"])
    head += "".join(f'<th class="feature">{escape(f)}</th>' for f in features)
    never = never_exercised(rows)
    first = rows.iloc[0]
    return (
        f'<p class="note">Run {escape(str(first["run_id"]))} ({html_value(first["time"])}). A cell '
        "counts the checked scenarios that exercised the feature; &mdash; marks one no scenario "
        "of the cell reached, n/a one its pool kind can never exercise (hover for why). Not "
        "exercised in any cell that can: "
        + (escape(", ".join(never)) if never else "none")
        + ".</p>"
        + f'<table id="feature-coverage"><thead><tr>{head}</tr></thead>'
        + f"<tbody>{''.join(body)}</tbody></table>"
    )
