"""The HTML dashboard: one self-contained file (inline CSS and SVG, no script, and a Content
Security Policy that forbids every fetch), so it works offline and from a CI artifact."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable, Optional

import pandas as pd

from reports.charts import interval_chart, line_chart, sparkline
from reports.outcome import Outcome
from reports.report import MATRIX_FILE, Report
from reports.schema import CELL_COLUMNS, CELL_DETAIL_COLUMNS

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1300px}
h1{margin:0 0 8px}h2{margin-top:32px;border-bottom:1px solid #ddd}
.verdict{padding:10px 14px;font-weight:600;border-radius:4px}\
.PASS{background:#e6f4ea}.FAIL{background:#fde8e8}
table{border-collapse:collapse;margin:8px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:middle}
th{background:#f5f5f5}.regression{background:#fde8e8}.improvement{background:#e6f4ea}.noisy{background:#fff4d6}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{background:#fff;border:1px solid #eee}
.title{font-weight:600;font-size:13px}.tick,.legend{font-size:10px}.label{font-size:11px}
.axis{stroke:#888}.reference{stroke:#999;stroke-dasharray:4 3}.empty,.note{color:#666}
td.covered{background:#e6f4ea;text-align:right}td.uncovered{background:#fde8e8;text-align:center}
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
COVERAGE_CELL = ("pool", "dtype", "backend", "mode")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return escape("" if value is None else str(value))


def _table(
    header: Iterable[str],
    rows: Iterable[Iterable[Any]],
    table_id: str = "",
    row_classes: Iterable[str] = (),
) -> str:
    classes = list(row_classes)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        css = f' class="{classes[i]}"' if i < len(classes) else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _check_matrix(checks: pd.DataFrame) -> str:
    if checks.empty:
        return '<p class="empty">No check records (run <code>kvh run</code> into this folder).</p>'
    pools = sorted(checks["pool"].unique())
    rows = []
    for backend, group in checks.groupby("backend"):
        cells = []
        for pool in pools:
            outcomes = group.loc[group["pool"] == pool, "outcome"].value_counts()
            known, skipped = (
                outcomes.get(Outcome.KNOWN_DIVERGENCE, 0),
                outcomes.get(Outcome.SKIPPED, 0),
            )
            cells.append(
                f"{outcomes.get(Outcome.PASS, 0)}/{outcomes.get(Outcome.FINDING, 0)}"
                + (f" +{known}kd" if known else "")
                + (f" ({skipped} skipped)" if skipped else "")
            )
        rows.append([escape(backend or "(none)"), *cells])
    return (
        _table(["backend", *pools], rows)
        + '<p class="note">Cells: checks passed / with findings, + known divergences.</p>'
    )


def _findings(report: Report) -> str:
    columns = ["pool", "dtype", "backend", "era", "engine", "sut", "scenario", "run_id"]
    rows = []
    for _, row in report.findings.iterrows():
        link = row.get("repro_link", "")
        repro = (
            f'<a href="{escape(link)}">{escape(link.rsplit("/", 1)[-1])}</a>'
            if link
            else "not found"
        )
        rows.append([_cell(row.get(c)) for c in columns] + [_cell(row.get("detail")), repro])
    if not rows:
        rows = [["no findings", *[""] * (len(columns) + 1)]]
    return _table([*columns, "finding", "repro"], rows, table_id="findings")


def _matrix(report: Report) -> str:
    matrix = report.matrix
    if isinstance(matrix, dict):
        matrix = next((v for v in matrix.values() if isinstance(v, list)), matrix)
    if matrix is None:
        body = (
            f'<p class="empty">Capability matrix not recorded (no {MATRIX_FILE} in the results '
            "folder).</p>"
        )
    elif isinstance(matrix, list) and matrix and all(isinstance(r, dict) for r in matrix):
        header = list(dict.fromkeys(k for r in matrix for k in r))
        body = _table(
            header, [[_cell(r.get(k)) for k in header] for r in matrix], table_id="matrix"
        )
    else:
        body = f"<pre>{escape(json.dumps(matrix, indent=1)[:20000])}</pre>"
    skipped = (
        report.checks[report.checks["outcome"] == Outcome.SKIPPED]
        if not report.checks.empty
        else report.checks
    )
    rows = [
        [_cell(r.get(c)) for c in ("sut", "era", "engine", "pool", "dtype", "device", "detail")]
        for _, r in skipped.drop_duplicates(
            [c for c in ("sut", "era", "engine", "pool", "dtype") if c in skipped.columns]
        ).iterrows()
    ]
    unmeasured = (
        report.bench[report.bench["error"].fillna("") != ""]
        if "error" in report.bench
        else report.bench.iloc[0:0]
    )
    rows += [
        [_cell(r.get(c)) for c in ("sut", "era", "engine", "pool", "dtype", "device", "error")]
        for _, r in unmeasured.iterrows()
    ]
    skips = (
        _table(["sut", "era", "engine", "pool", "dtype", "device", "why"], rows)
        if rows
        else '<p class="note">Nothing was skipped.</p>'
    )
    return body + "<h3>Skipped checks and unmeasured cells</h3>" + skips


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


def _coverage(coverage: pd.DataFrame) -> str:
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
        tds = [f"<td>{_cell(value)}</td>" for value in cell]
        tds += [f"<td>{_cell(group[c].iloc[0])}</td>" for c in ("checked", "max_slot_bucket")]
        tds += [
            f'<td class="covered">{int(counts[f])}</td>'
            if counts.get(f, 0) > 0
            else f'<td title="{escape(unreachable[f])}">n/a</td>'
            if f in unreachable
            else '<td class="uncovered" title="not exercised">&mdash;</td>'
            for f in features
        ]
        body.append(f"<tr>{''.join(tds)}</tr>")
    header = [*COVERAGE_CELL, "checked", "max slot", *features]
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    reachable = rows[rows["unreachable"] == ""]
    never = [
        f
        for f in features
        if (reachable["feature"] == f).any()
        and not (reachable.loc[reachable["feature"] == f, "scenarios"] > 0).any()
    ]
    first = rows.iloc[0]
    return (
        f'<p class="note">Run {escape(str(first["run_id"]))} ({_cell(first["time"])}). A cell '
        "counts the checked scenarios that exercised the feature; &mdash; marks one no scenario "
        "of the cell reached, n/a one its pool kind can never exercise (hover for why). Not "
        "exercised in any cell that can: "
        + (escape(", ".join(never)) if never else "none")
        + ".</p>"
        + f'<table id="feature-coverage"><thead><tr>{head}</tr></thead>'
        + f"<tbody>{''.join(body)}</tbody></table>"
    )


def _series(frame: pd.DataFrame, value: str) -> dict[tuple, dict[str, list[tuple[float, float]]]]:
    charts: dict[tuple, dict[str, list]] = {}
    usable = frame[frame[value].notna()] if value in frame else frame.iloc[0:0]
    for _, row in usable.iterrows():
        name = "/".join(str(row[c]) for c in ("sut", "engine", "era", "backend") if row[c])
        key = (row["pool"], row["dtype"], row["device"])
        charts.setdefault(key, {}).setdefault(name, []).append(
            (float(row["tokens"]), float(row[value]))
        )
    return charts


def _throughput(report: Report) -> str:
    if report.bench.empty:
        return (
            '<p class="empty">No benchmark records (run <code>kvh bench</code> into this '
            "folder).</p>"
        )
    svgs = []
    for value, label in (("gbps", "GB/s"), ("roofline_fraction", "fraction of roofline")):
        for (pool, dtype, device), series in sorted(_series(report.bench, value).items()):
            svgs.append(line_chart(f"{label}: {pool} {dtype} on {device}", series, "tokens", label))
    return f'<div class="charts">{"".join(svgs)}</div>'


def _overhead(report: Report) -> str:
    bench = report.bench
    if "api_overhead_ratio" not in bench or bench["api_overhead_ratio"].isna().all():
        return '<p class="empty">No API overhead records.</p>'
    rows = [
        (
            f"{r['pool']} {r['dtype']} {r['era']}/{r['engine']} {r['tokens']} tok",
            float(r["api_overhead_ratio"]),
            float(r["api_overhead_ci_low"]),
            float(r["api_overhead_ci_high"]),
        )
        for _, r in bench[bench["api_overhead_ratio"].notna()].iterrows()
    ]
    return interval_chart(
        "API overhead ratio (time through the API / time of the bare store), 95% CI", rows
    )


def _regressions(report: Report) -> str:
    gate, s = report.gate, report.settings
    note = (
        f'<p class="note">Baseline {escape(s.baseline)}; a regression is a median slower by at '
        f"least {s.threshold:.0%} with Mann-Whitney p &lt; {s.alpha}; a cell with robust CV "
        f"(MAD-based) above {s.max_cv:.0%} is noisy. History: median per run, oldest first.</p>"
    )
    if gate.empty:
        return note + '<p class="empty">No timing records.</p>'
    rows = [
        [
            f"<b>{escape(r['status'])}</b>",
            _cell(r["cell"]),
            _cell(r["ratio"]),
            _cell(r["p_value"]),
            _cell(r["cv"]),
            _cell(r["latest_median_ns"]),
            _cell(r["baseline_median_ns"]),
            _cell(r["baseline_runs"]),
            _cell(r["latest_run"]),
            sparkline([median for _, median in r["history"]]),
        ]
        for _, r in gate.iterrows()
    ]
    header = [
        "status",
        f"cell ({' | '.join(CELL_COLUMNS + CELL_DETAIL_COLUMNS)})",
        "ratio",
        "p",
        "CV",
        "latest median ns",
        "baseline median ns",
        "baseline runs",
        "latest run",
        "history",
    ]
    return note + _table(header, rows, table_id="regressions", row_classes=gate["status"].tolist())


def render_dashboard(report: Report, coverage: Optional[pd.DataFrame] = None) -> str:
    """The page; `coverage` is the store's coverage records (none: an older store)."""
    head = report.verdict().split(":", 1)[0]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    warnings = "".join(f"<li>{escape(w)}</li>" for w in report.warnings)
    sections = [
        ("Correctness", _check_matrix(report.checks) + "<h3>Findings</h3>" + _findings(report)),
        ("Scenario feature coverage", _coverage(pd.DataFrame() if coverage is None else coverage)),
        ("Coverage and capability matrix", _matrix(report)),
        ("Throughput", _throughput(report)),
        ("API overhead", _overhead(report)),
        ("Regression gate and history", _regressions(report)),
    ]
    body = "".join(
        f'<h2 id="{escape(t.split()[0].lower())}">{escape(t)}</h2>{html}' for t, html in sections
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f'<link rel="icon" href="data:,"><title>kvh report: {head}</title>'
        f"<style>{CSS}</style></head>"
        f'<body><h1>kvh report</h1><p class="note">{escape(str(report.results_dir))}, '
        f"generated {now}</p>"
        f'<div class="verdict {head}">{escape(report.verdict())}</div>'
        + (f"<h3>Skipped files</h3><ul>{warnings}</ul>" if warnings else "")
        + body
        + "</body></html>\n"
    )
