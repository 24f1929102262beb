"""The dashboard's correctness grids: one per family of pool kinds, backends by kinds, one
section per SUT and one for the era table; a cell counts checks passed / with findings, known
divergences and what was not checked (the reasons on hover)."""

from __future__ import annotations

from html import escape
from typing import Optional

import pandas as pd

from reports.coverage_section import html_value
from reports.outcome import Outcome

# harness/report/cell_result.py's name for the era table's rows (reports/ imports no harness).
ERA_TABLE_SUT = "model"
ERA_TABLE_HEADING = "Era table: each era's call-site model against the ground truth (sut model)"
NO_BACKEND = "skipped before a backend was chosen"
# What a grid cell counts after "passed/with findings", as (how it is written, outcome): the
# other checked outcomes, then those of the rows that were not checked.
GRID_CHECKED_OUTCOMES = (
    ("+{}kd", Outcome.KNOWN_DIVERGENCE),
    ("+{} both raised", Outcome.BOTH_RAISED),
)
GRID_NOT_RUN_OUTCOMES = (("{} skipped", Outcome.SKIPPED), ("{} unexplored", Outcome.UNEXPLORED))


def _grid_cell(rows: pd.DataFrame) -> str:
    """One backend x pool kind cell of the correctness grid: blank where no check applies, and
    the reasons of what was not checked on hover."""
    if rows.empty:
        return "<td></td>"
    counts = {str(k): int(v) for k, v in rows["outcome"].value_counts().items()}
    passed, found = counts.get(Outcome.PASS, 0), counts.get(Outcome.FINDING, 0)
    checked = [f"{passed}/{found}"] if passed or found else []
    checked += [form.format(counts[o]) for form, o in GRID_CHECKED_OUTCOMES if counts.get(o)]
    not_run = [form.format(counts[o]) for form, o in GRID_NOT_RUN_OUTCOMES if counts.get(o)]
    not_checked = rows[rows["outcome"].isin([Outcome.SKIPPED, Outcome.UNEXPLORED])]
    css = "fail" if found else "ok" if checked else ""
    reasons = sorted({html_value(d) for d in not_checked.get("detail", ())} - {""})
    title = f' title="{"; ".join(reasons)}"' if reasons else ""
    # Each part unbroken, so a narrow column breaks between them, never inside one.
    text = f"<span>{escape(' '.join(checked))}</span>" if checked else ""
    text = f"<b>{text}</b>" if found else text
    if not_run:
        text += f' <span class="not-run">{escape(", ".join(not_run))}</span>'
    return f'<td class="{css}"{title}>{text}</td>'


def _subjects(checks: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(heading, rows) of each SUT's checks, then of the era table."""
    suts = checks["sut"].fillna("").astype(str)
    candidates = sorted(set(suts) - {ERA_TABLE_SUT})
    subjects = [(f"SUT {sut or '(unnamed)'}", checks[suts == sut]) for sut in candidates]
    if (suts == ERA_TABLE_SUT).any():
        subjects.append((ERA_TABLE_HEADING, checks[suts == ERA_TABLE_SUT]))
    return subjects


RAN = (Outcome.PASS, Outcome.FINDING, Outcome.KNOWN_DIVERGENCE, Outcome.BOTH_RAISED)


def correctness_grid(checks: pd.DataFrame, families: Optional[dict[str, str]] = None) -> str:
    """One grid of backends by pool kinds per family of kinds (`families`: kind -> family, base
    first; the kvh report verb passes harness/report/families.py's), each with only the backends
    and kinds that ran a check; then, in one line, the backends no check ran through."""
    if checks.empty:
        return '<p class="empty">No check records (run <code>kvh run</code> into this folder).</p>'
    families = families or {}
    ran = checks[checks["outcome"].isin(RAN)]
    rank = {pool: index for index, pool in enumerate(families)}
    pools = sorted(ran["pool"].unique(), key=lambda pool: (rank.get(pool, len(rank)), pool))
    by_family: dict[str, list[str]] = {}
    for pool in pools:
        by_family.setdefault(families.get(pool, "other"), []).append(pool)
    grids = []
    for family, kinds in by_family.items():
        ran_here = ran[ran["pool"].isin(kinds)]["backend"]
        rows = checks[checks["pool"].isin(kinds) & checks["backend"].isin(ran_here)]
        grids.append(f"<h3>{escape(family)} kinds</h3>" + _grid(rows, kinds, family))
    return (
        "".join(grids)
        + '<p class="note">Cells: checks passed / with findings, +kd known divergences, then what '
        "was not checked (hover for why); blank: no check of that backend on that pool kind. "
        "The era table runs each era&#39;s call-site model against the ground truth.</p>"
        + _never_ran(checks[~checks["backend"].isin(ran["backend"])])
    )


def _grid(checks: pd.DataFrame, pools: list[str], family: str) -> str:
    body = []
    for heading, rows in _subjects(checks):
        span = len(pools) + 1
        body.append(f'<tr class="subject"><th colspan="{span}">{escape(heading)}</th></tr>')
        backends = rows["backend"].fillna("").astype(str)
        # Rows with no backend are skips decided before any backend's call site was chosen
        # (the SUT offers no pool class of that kind, say), so they close the section.
        for backend in sorted(set(backends), key=lambda b: (b == "", b)):
            of_backend = rows[backends == backend]
            label = (
                f"<td>{escape(backend)}</td>"
                if backend
                else f'<td class="rowlabel">{escape(NO_BACKEND)}</td>'
            )
            cells = [_grid_cell(of_backend[of_backend["pool"] == pool]) for pool in pools]
            body.append(f"<tr>{label}{''.join(cells)}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in ["backend", *pools])
    return (
        f'<table id="correctness-{escape(family)}" class="correctness"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _never_ran(idle: pd.DataFrame) -> str:
    """The backends none of whose checks ran, with their skips counted: out of the grid, which
    they would fill with blank rows, but never out of sight."""
    if idle.empty:
        return ""
    counts = idle["backend"].fillna("").astype(str).value_counts()
    named = [
        f"{backend or NO_BACKEND} ({count} skipped)" for backend, count in sorted(counts.items())
    ]
    return f'<p class="note">No check ran through: {escape(", ".join(named))}.</p>'
