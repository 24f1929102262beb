"""The run summary's own sections: the era table (the model's eras against the ground truth), the
known divergences reproduced, and every skip with its reason, as Markdown."""

from __future__ import annotations

from collections import Counter, defaultdict

import pandas as pd

from backends.divergences import KnownDivergence
from harness.report.cell_result import CellResult
from reports.markdown import markdown_table
from reports.outcome import Outcome


def divergence_line(divergence: KnownDivergence, eras: set[str], where: set[str]) -> str:
    return (
        f"`{divergence.name}` ({divergence.kind}; eras {', '.join(divergence.eras)}; "
        f"{divergence.source}), reproduced in era {', '.join(sorted(eras))} on "
        f"{', '.join(sorted(where))}: {divergence.reason}"
    )


def reproduced(results: list[CellResult]) -> list[str]:
    """One line per declared divergence a known-divergence row reproduced."""
    seen: dict[str, tuple[KnownDivergence, set[str], set[str]]] = {}
    for result in results:
        subject = result.subject
        if result.outcome is not Outcome.KNOWN_DIVERGENCE or subject is None:
            continue
        for divergence in result.divergences:
            _, eras, where = seen.setdefault(divergence.name, (divergence, set(), set()))
            eras.add(subject.era)
            where.add(f"{subject.backend}:{subject.mode}/{result.pool}")
    return [divergence_line(*entry) for entry in seen.values()]


def era_table_markdown(rows: list[CellResult]) -> str:
    """Per backend and mode, each era's call site on the baseline pools against the ground truth
    (the oldest era's): checks passed, known divergences (named), both raised, findings."""
    if not rows:
        return ""
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in rows:
        key = (f"{row.era_baseline.backend}:{row.era_baseline.mode}", row.era_baseline.era)
        table[key][Outcome(str(row.outcome))] += 1
        names[key].update(d.name for d in row.divergences)
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
    model = reproduced(rows)
    if model:
        lines += ["", "Divergences the model reproduced:", "", *[f"- {line}" for line in model]]
    return "\n".join(lines) + "\n"


def skip_lines(results: list[CellResult]) -> list[str]:
    """Every reason a check was skipped or left unexplored, with how many checks and where."""
    grouped: dict[str, list[CellResult]] = defaultdict(list)
    for result in results:
        if result.outcome in (Outcome.SKIPPED, Outcome.UNEXPLORED) and result.skip is not None:
            grouped[f"{result.outcome}: {result.skip.reason}"].append(result)
    lines = []
    for reason, rows in grouped.items():
        cells = sorted({f"{r.label.split('@')[0]} {r.pool}/{r.dtype}" for r in rows})
        shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
        lines.append(f"{len(rows)} checks {reason} ({shown})")
    return lines
