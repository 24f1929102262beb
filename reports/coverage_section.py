"""The newest run's scenario-feature coverage: the dashboard's section (what no scenario reached
where it could, and per feature how many cells reached it) and its own page, one row per cell
with features as columns (n/a where the pool kind can never exercise one)."""

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


COVERAGE_PAGE = "coverage.html"  # beside dashboard.html: every cell's row


def _by_feature(rows: pd.DataFrame) -> str:
    """Per feature: the cells whose pool kind can exercise it, those that did, and the scenarios
    that did; a feature no cell reached where it could is marked."""
    reachable = rows[rows["unreachable"] == ""]
    body = []
    for feature, group in reachable.groupby("feature", sort=False):
        reached = int((group["scenarios"] > 0).sum())
        mark = ' class="uncovered"' if reached == 0 else ""
        body.append(
            f"<tr{mark}><td>{escape(str(feature))}</td><td>{len(group)}</td><td>{reached}</td>"
            f"<td>{int(group['scenarios'].sum())}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>" for h in ("feature", "cells that can", "cells that did", "scenarios")
    )
    return (
        f'<table id="coverage-by-feature"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def coverage_section(coverage: pd.DataFrame) -> str:
    """The dashboard's view: what no scenario reached where it could, and per feature how many
    cells reached it; every cell's row is on its own page (`coverage_table`), whose 10,000 cells
    were most of the dashboard's bytes."""
    rows = newest_coverage(coverage)
    if rows.empty:
        return (
            '<p class="empty">No coverage recorded for this run (<code>kvh run</code> records it '
            "next to its checks).</p>"
        )
    never = never_exercised(rows)
    first = rows.iloc[0]
    return (
        f'<p class="note">Run {escape(str(first["run_id"]))} ({html_value(first["time"])}). Not '
        "exercised in any cell that can: "
        + (escape(", ".join(never)) if never else "none")
        + f'. Every cell\'s row: <a href="{COVERAGE_PAGE}">{COVERAGE_PAGE}</a>.</p>'
        + _by_feature(rows)
    )


def coverage_table(coverage: pd.DataFrame) -> str:
    """Features as columns, one row per cell: how many checked scenarios exercised each; n/a
    where the pool kind can never exercise one, for a numbered reason said once below."""
    rows = newest_coverage(coverage)
    if rows.empty:
        return '<p class="empty">No coverage recorded.</p>'
    features = list(pd.unique(rows["feature"]))
    # Why a kind can never exercise a feature, said once each and cited by number: the same
    # reason on every row of a kind would be most of the page's bytes.
    reasons = list(pd.unique(rows.loc[rows["unreachable"] != "", "unreachable"]))
    number = {reason: index for index, reason in enumerate(reasons, 1)}
    body = []
    for cell, group in rows.groupby(list(COVERAGE_CELL), sort=True, dropna=False):
        counts = dict(zip(group["feature"], group["scenarios"]))
        unreachable = _unreachable(group)
        tds = [f"<td>{html_value(value)}</td>" for value in cell]
        tds += [f"<td>{html_value(group[c].iloc[0])}</td>" for c in ("checked", "max_slot_bucket")]
        tds += [
            f'<td class="covered">{int(counts[f])}</td>'
            if counts.get(f, 0) > 0
            else f"<td>n/a<sup>{number[unreachable[f]]}</sup></td>"
            if f in unreachable
            else '<td class="uncovered" title="not exercised">&mdash;</td>'
            for f in features
        ]
        body.append(f"<tr>{''.join(tds)}</tr>")
    # Feature names stand on end, so some thirty columns fit the page's width.
    head = "".join(f"<th>{escape(h)}</th>" for h in [*COVERAGE_CELL, "checked", "max slot"])
    head += "".join(f'<th class="feature">{escape(f)}</th>' for f in features)
    legend = "".join(f"<li>{escape(reason)}</li>" for reason in reasons)
    first = rows.iloc[0]
    return (
        f'<p class="note">Run {escape(str(first["run_id"]))} ({html_value(first["time"])}). A cell '
        "counts the checked scenarios that exercised the feature; &mdash; marks one no scenario "
        "of the cell reached, n/a one its pool kind can never exercise, for the numbered reason "
        "below.</p>"
        + f'<table id="feature-coverage"><thead><tr>{head}</tr></thead>'
        + f"<tbody>{''.join(body)}</tbody></table>"
        + (f'<ol class="na-reasons">{legend}</ol>' if legend else "")
    )
