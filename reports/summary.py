"""The run summary: a pool x dtype by era/engine table of checks passed / findings, verdict first."""
from __future__ import annotations

import pandas as pd


def column_of(row: pd.Series) -> str:
    if row["sut"] == "builtin":
        return f"{row['era']}/{row['engine']}"
    return f"{row['sut']}[{row['era']}]"


def _cell(group: pd.DataFrame) -> str:
    passed = int((group["outcome"] == "pass").sum())
    failed = int((group["outcome"] == "findings").sum())
    known = int((group["outcome"] == "known_divergence").sum())
    skipped = int((group["outcome"] == "skipped").sum())
    if skipped == len(group):
        return "skip"
    return f"{passed}/{failed}" + (f" +{known}kd" if known else "")


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows: pool x dtype; columns: era/engine (or foreign SUT); cells: passed/findings (+known)."""
    if frame.empty:
        return pd.DataFrame()
    frame = frame.assign(column=frame.apply(column_of, axis=1))
    table = frame.groupby(["pool", "dtype", "column"], sort=False).apply(_cell, include_groups=False)
    return table.unstack("column").fillna("")


def markdown_table(table: pd.DataFrame) -> str:
    if table.empty:
        return "(no checks)"
    header = ["pool", "dtype", *table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (pool, dtype), row in table.iterrows():
        lines.append("| " + " | ".join([pool, dtype, *row.tolist()]) + " |")
    return "\n".join(lines)


def verdict(frame: pd.DataFrame) -> str:
    findings = int((frame["outcome"] == "findings").sum())
    known = int((frame["outcome"] == "known_divergence").sum())
    passed = int((frame["outcome"] == "pass").sum())
    skipped = int((frame["outcome"] == "skipped").sum())
    head = "FAIL" if findings else "PASS"
    return (f"{head}: {passed} checks passed, {findings} with findings, {known} known divergences, "
            f"{skipped} skipped")


def summary_markdown(frame: pd.DataFrame, meta: dict, finding_lines: list[str],
                     divergence_lines: list[str], skip_lines: list[str]) -> str:
    parts = [f"# kvh run {meta['run_id']}", "", f"**{verdict(frame)}**", "",
             f"commit `{meta['git_commit']}`, host `{meta['host']}`, device `{meta['device']}`, "
             f"seed {meta['seed']}", "",
             "Cells: checks passed / with findings (+ known divergences), one check = one "
             "scenario through one backend call site.", "", markdown_table(summary_table(frame))]
    for title, lines in (("Findings", finding_lines), ("Known divergences", divergence_lines),
                         ("Skipped", skip_lines)):
        if lines:
            parts += ["", f"## {title}", "", *[f"- {line}" for line in lines]]
    return "\n".join(parts) + "\n"
