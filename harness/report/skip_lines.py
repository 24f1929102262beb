"""The summary's skip lines: every reason a check was skipped or left unexplored, with how many
checks and where, read from the stored check rows (each names its cell, skips included)."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from reports.check_label import check_label
from reports.outcome import Outcome, SkipKind, skip_kind_of
from reports.records import text_of

# How a row the verdict counts apart is said: neither is counted.
APART_SAID = {
    SkipKind.BY_DESIGN: "left out by design (not counted)",
    SkipKind.NOT_OFFERED: "not offered by the SUT (not counted)",
}
NOT_CHECKED = (Outcome.SKIPPED.value, Outcome.UNEXPLORED.value)
# Cells a skip line names; the rest are counted.
NAMED_CELLS = 4
# The columns a line reads.
_READ = (
    "outcome",
    "skip_kind",
    "detail",
    "sut",
    "era",
    "engine",
    "backend",
    "mode",
    "pool",
    "dtype",
)


def skip_lines(rows: pd.DataFrame) -> list[str]:
    """One line per outcome and reason, in the order the rows first gave it."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    if rows.empty:
        return []
    # Only those columns: a default run has some 20k rows left out by design.
    columns = [column for column in _READ if column in rows]
    for row in rows.loc[rows["outcome"].isin(NOT_CHECKED), columns].to_dict("records"):
        # A declared trim of the plan is said as such: the verdict does not count it.
        kind = skip_kind_of(row.get("skip_kind"))
        outcome = APART_SAID.get(kind, row["outcome"])
        grouped[f"{outcome}: {text_of(row.get('detail'))}"].append(row)
    lines = []
    for reason, skipped in grouped.items():
        cells = sorted(
            {
                f"{check_label(r['sut'], r['era'], r['engine'], r['backend'], r['mode'])} "
                f"{r['pool']}/{r['dtype']}"
                for r in skipped
            }
        )
        more = len(cells) - NAMED_CELLS
        shown = ", ".join(cells[:NAMED_CELLS]) + (f" and {more} more" if more > 0 else "")
        lines.append(f"{len(skipped)} checks {reason} ({shown})")
    return lines
