"""The era table, as the run summary's section: per backend and mode, each era's call site on the
baseline pools against the ground truth (the oldest era's), read from the era-table rows a run
stored (sut ERA_TABLE_SUT)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Mapping

import pandas as pd

from backends.registry import Backend
from harness.report.divergence_lines import reproduced
from reports.markdown import markdown_table
from reports.outcome import Outcome, normalised
from reports.records import text_of


def era_table_markdown(rows: pd.DataFrame, backends: Mapping[str, Backend]) -> str:
    """Checks passed, known divergences (named), both raised and findings per (backend:mode,
    era); "" for a run without era-table rows. `backends`: the call-site entries the run used."""
    if rows.empty:
        return ""
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in rows.to_dict("records"):
        key = (f"{row['backend']}:{row['mode']}", row["era"])
        table[key][Outcome(normalised(row["outcome"]))] += 1
        names[key].update(filter(None, text_of(row.get("divergence")).split(",")))
    table_rows = [
        {
            "backend:mode": cell,
            "era": era,
            "passed": tally[Outcome.PASS],
            "known divergences": f"{tally[Outcome.KNOWN_DIVERGENCE]}"
            + (
                f" ({', '.join(sorted(names[(cell, era)]))})"
                if tally[Outcome.KNOWN_DIVERGENCE]
                else ""
            ),
            "both raised": tally[Outcome.BOTH_RAISED],
            "findings": tally[Outcome.FINDING],
        }
        for (cell, era), tally in sorted(table.items())
    ]
    lines = [
        "## Era table",
        "",
        "The baseline pools through each era's call site, against the oldest era's run (the "
        "ground truth); a finding here is a finding against the call-site models "
        "(docs/verdict.md).",
        "",
        markdown_table(pd.DataFrame(table_rows)),
    ]
    model = reproduced(rows, backends)
    if model:
        lines += ["", "Divergences the model reproduced:", "", *[f"- {line}" for line in model]]
    return "\n".join(lines) + "\n"
