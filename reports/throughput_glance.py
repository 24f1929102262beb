"""The dashboard's first-screen throughput: one row per cell family (a SUT and engine, a backend
call site and mode, a pool kind and dtype), the cells of all its token counts, eras and cache
states together. A nightly job's owner reads here whether anything moved, and how many cells
gave no figure, before any chart."""

from __future__ import annotations

from html import escape

import pandas as pd

from reports.charts import sparkline
from reports.outcome import Outcome

FAMILY = ("sut", "engine", "backend", "mode", "pool", "dtype")
STATUS_ORDER = ("regression", "improvement", "noisy", "unchanged", "new")


def _statuses(cells: pd.DataFrame, gate: pd.DataFrame) -> str:
    if gate.empty:
        return ""
    counts = gate[gate["cell"].isin(cells["cell"])]["status"].value_counts()
    return ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if s in counts)


def _history(cells: pd.DataFrame, gate: pd.DataFrame) -> str:
    """The median per run of the family's largest write (its most tokens, first era and cache),
    on the latest run's machine, oldest first: the trend a glance can read."""
    measured = cells[cells["outcome"] == Outcome.MEASURED]
    if gate.empty or measured.empty:
        return ""
    largest = measured.sort_values(["tokens", "era", "cache"], ascending=[False, True, True])
    judged = gate[gate["cell"] == largest["cell"].iloc[0]]
    if judged.empty:
        return ""
    return sparkline([median for _, median in judged["history"].iloc[0]])


def throughput_glance(bench: pd.DataFrame, gate: pd.DataFrame) -> str:
    """`bench`: each cell's latest bench row (reports.report_data.Report.bench); `gate`: the
    regression table of the same cells."""
    if bench.empty:
        return (
            '<p class="empty">No benchmark records (run <code>kvh bench</code> into this '
            "folder).</p>"
        )
    rows = []
    for family, cells in bench.groupby(list(FAMILY), sort=True, dropna=False):
        sut, engine, backend, mode, pool, dtype = (str(value) for value in family)
        measured = cells[cells["outcome"] == Outcome.MEASURED]
        errors = int((cells["outcome"] == Outcome.ERROR).sum())
        findings = int((cells["outcome"] == Outcome.FINDING).sum())
        top = measured.sort_values("tokens").iloc[-1] if not measured.empty else None
        figure = (
            f"{float(top['gbps']):.2f} GB/s at {int(top['tokens'])} tokens"
            + (
                f", {float(top['roofline_fraction']):.2f} of a copy"
                if pd.notna(top.get("roofline_fraction"))
                else ""
            )
            if top is not None
            else ""
        )
        css = ' class="regression"' if errors or findings else ""
        rows.append(
            f"<tr{css}><td>{escape(f'{sut}/{engine}')}</td>"
            f"<td>{escape(f'{backend}:{mode}')}</td><td>{escape(f'{pool} {dtype}')}</td>"
            f"<td>{len(measured)}</td><td>{errors + findings}</td><td>{escape(figure)}</td>"
            f"<td>{escape(_statuses(cells, gate))}</td><td>{_history(cells, gate)}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "SUT/engine",
            "call site",
            "pool",
            "cells measured",
            "errors and findings",
            "largest write",
            "gate",
            "history",
        )
    )
    return (
        f'<table id="glance"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
