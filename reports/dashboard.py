"""The HTML dashboard: one self-contained file (inline CSS and SVG, no script, and a Content
Security Policy that forbids every fetch), so it works offline and from a CI artifact."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any, Iterable, Optional

import pandas as pd

from reports.charts import interval_chart, line_chart, sparkline
from reports.correctness_grid import correctness_grid
from reports.coverage_section import coverage_section, coverage_table, html_value
from reports.finding_groups import SPREAD_COLUMNS, group_findings
from reports.mutation_score import mutation_html, newest_campaign, percent
from reports.mutation_score import summary as score_summary
from reports.outcome import Outcome
from reports.real_code_history import drop_line
from reports.report_data import MATRIX_FILE, Report
from reports.schema import CELL_COLUMNS, CELL_DETAIL_COLUMNS, MACHINE_COLUMNS
from reports.summary import door_lines_run, doors_driven, release_code_of
from reports.throughput_glance import throughput_glance

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1300px}
h1{margin:0 0 8px}h2{margin-top:32px;border-bottom:1px solid #ddd}
.verdict{padding:10px 14px;font-weight:600;border-radius:4px}\
.PASS{background:#e6f4ea}.FAIL{background:#fde8e8}
table{border-collapse:collapse;margin:8px 0;max-width:100%}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:middle;\
overflow-wrap:break-word}
th{background:#f5f5f5}.regression{background:#fde8e8}.improvement{background:#e6f4ea}.noisy{background:#fff4d6}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{background:#fff;border:1px solid #eee}
.title{font-weight:600;font-size:13px}.tick,.legend{font-size:10px}.label{font-size:11px}
.axis{stroke:#888}.reference{stroke:#999;stroke-dasharray:4 3}.empty,.note{color:#666}
td.covered{background:#e6f4ea;text-align:right}td.uncovered{background:#fde8e8;text-align:center}
#feature-coverage td,#feature-coverage th{font-size:12px;padding:2px 4px}
#feature-coverage th.feature{writing-mode:vertical-rl;transform:rotate(180deg);\
white-space:nowrap;vertical-align:bottom}
.correctness span{white-space:nowrap}td.ok{background:#e6f4ea}td.fail{background:#fde8e8}\
td.fail b{color:#a00}.not-run{color:#666;font-size:11px}.lost{color:#a00}
tr.subject th{background:#e8eef7}td.rowlabel{font-style:italic;color:#555}
summary{cursor:pointer;margin:8px 0}
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# The sut of era-table rows (reports/schema.py, check records): the harness's own call-site models.
# What a row of skipped checks or unmeasured bench cells lists of where they were.
NOT_RUN_SPREAD = ("sut", "pool", "dtype", "era", "engine", "backend", "device")
FINDING_COLUMNS = ("backend", "mode", "pool", "dtype", "era", "engine", "sut", "scenario")


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


def _finding_rows(findings: pd.DataFrame) -> list[list[str]]:
    rows = []
    for _, row in findings.iterrows():
        rows.append(
            [html_value(row.get(c)) for c in FINDING_COLUMNS]
            + [html_value(row.get("detail")), _repro(row.get("repro_link"))]
        )
    return rows


def _repro(link: Any) -> str:
    """A link to a repro file (relative to the report), named by its file name."""
    if not isinstance(link, str) or not link:
        return "not found"
    return f'<a href="{escape(link)}">{escape(link.rsplit("/", 1)[-1])}</a>'


def _findings(report: Report) -> str:
    """One row per signature with its count and one repro, then every finding behind it."""
    groups = group_findings(report.findings)
    if not groups:
        return _table(["finding"], [["no findings"]], table_id="findings")
    summary = []
    for group in groups:
        signature = group.signature
        where = " &middot; ".join(
            f"{escape(column)}: {escape(', '.join(values))}"
            for column in SPREAD_COLUMNS
            if (values := group.spread(column))
        )
        summary.append(
            [
                f"<b>{group.count}</b>",
                escape(signature.oracle),
                escape(signature.door),
                escape(signature.message),
                where,
                _repro(group.repro),
            ]
        )
    every = []
    for number, group in enumerate(groups, 1):
        every += [[str(number), *row] for row in _finding_rows(group.findings)]
    return (
        _table(
            ["findings", "oracle", "pool", "finding (numbers as #)", "where", "one repro"],
            summary,
            table_id="finding-groups",
        )
        + f"<details><summary>All {len(report.findings)} findings, by group</summary>"
        + _table(["group", *FINDING_COLUMNS, "finding", "repro"], every, table_id="findings")
        + "</details>"
    )


def _distinct(values: Iterable[Any]) -> str:
    return ", ".join(sorted({html_value(v) for v in values} - {""}))


def _not_run_by_reason(frame: pd.DataFrame, reason: str, noun: tuple[str, str]) -> list[list[str]]:
    """One row per (sut, reason) of the rows that were not run: how many (`noun`: singular and
    plural), and where they were."""
    if frame.empty or reason not in frame:
        return []
    keyed = frame.assign(_sut=frame["sut"].map(html_value), _why=frame[reason].map(html_value))
    return [
        [f"{len(group)} {noun[len(group) != 1]}", why, sut]
        + [_distinct(group[c]) if c in group else "" for c in NOT_RUN_SPREAD[1:]]
        for (sut, why), group in keyed.groupby(["_sut", "_why"], sort=True)
    ]


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
            header, [[html_value(r.get(k)) for k in header] for r in matrix], table_id="matrix"
        )
    else:
        body = f"<pre>{escape(json.dumps(matrix, indent=1)[:20000])}</pre>"
    skipped = (
        report.checks[report.checks["outcome"] == Outcome.SKIPPED]
        if not report.checks.empty
        else report.checks
    )
    unmeasured = (
        report.bench[report.bench["error"].fillna("") != ""]
        if "error" in report.bench
        else report.bench.iloc[0:0]
    )
    rows = _not_run_by_reason(skipped, "detail", ("check", "checks")) + _not_run_by_reason(
        unmeasured, "error", ("bench cell", "bench cells")
    )
    skips = (
        _table(["not run", "why", *NOT_RUN_SPREAD], rows, table_id="not-run")
        if rows
        else '<p class="note">Nothing was skipped.</p>'
    )
    return body + "<h3>Skipped checks and unmeasured cells</h3>" + skips


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
        f"(MAD-based) above {s.max_cv:.0%} is noisy. Only runs on the latest run's machine "
        f"({', '.join(MACHINE_COLUMNS)}) are a baseline. History: median per run on that "
        "machine, oldest first.</p>"
    )
    if gate.empty:
        return note + '<p class="empty">No timing records.</p>'
    rows = [
        [
            # The detail says why a cell with earlier runs was not compared (another machine).
            f"<b>{escape(r['status'])}</b>"
            + (f"<br>{html_value(r['detail'])}" if r.get("detail") else ""),
            html_value(r["cell"]),
            html_value(r["ratio"]),
            html_value(r["p_value"]),
            html_value(r["cv"]),
            html_value(r["latest_median_ns"]),
            html_value(r["baseline_median_ns"]),
            html_value(r["baseline_runs"]),
            html_value(r["latest_run"]),
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


def _within_results(text: str, results_dir: Path) -> str:
    """`text` with the results folder's own path removed from the paths it names: the page is
    published from CI, where this machine's folders mean nothing."""
    for folder in {str(results_dir), str(results_dir.resolve())}:
        text = text.replace(folder.rstrip(os.sep) + os.sep, "")
    return text


def _suts(report: Report) -> str:
    """Each foreign SUT's newest run: version, era, the backends its own release code runs,
    and its write doors driven of all."""
    benched = report.bench_suts()
    if report.suts.empty and benched.empty:
        return '<p class="note">no foreign SUT in these results</p>'
    return (_checked_suts(report) if not report.suts.empty else "") + _benched_suts(benched)


def _benched_suts(benched: pd.DataFrame) -> str:
    """The SUTs a bench timed (a release bench runs each in its worker, and checks none)."""
    if benched.empty:
        return ""
    rows = [
        [escape(str(row[column])) for column in ("sut", "version", "eras", "timed_code")]
        for row in benched.to_dict("records")
    ]
    headers = ["SUT (timed)", "version", "eras timed", "timed code"]
    return _table(headers, rows, table_id="bench-suts")


def _checked_suts(report: Report) -> str:
    rows = []
    for row in report.suts.to_dict("records"):
        real = release_code_of(row)
        rows.append(
            [
                escape(str(row["sut"])),
                escape(str(row["version"])),
                escape(str(row["era"])),
                escape(f"{len(real)}: {', '.join(real)}"),
                escape(doors_driven(row) or "no source"),
                escape(door_lines_run(row) or "not measured"),
            ]
        )
    headers = [
        "SUT",
        "version",
        "era",
        "backends as release code",
        "write doors driven",
        "door lines run (--coverage)",
    ]
    lost = "".join(
        f'<p class="lost">release code lost: {escape(drop_line(row))}</p>'
        for row in report.real_code_drops.to_dict("records")
    )
    return lost + _table(headers, rows, table_id="suts")


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f'<link rel="icon" href="data:,"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def render_coverage_page(coverage: pd.DataFrame) -> str:
    """coverage.html: every cell's coverage row, linked from the dashboard's coverage section."""
    return _page(
        "kvh report: coverage",
        '<h1>Scenario feature coverage</h1><p class="note"><a href="dashboard.html">'
        "dashboard</a></p>" + coverage_table(coverage),
    )


def _score_of(mutation: pd.DataFrame) -> str:
    """`: 91.2% on sglang==0.5.23`, the newest campaign's, or "" where the store has none."""
    rows = newest_campaign(mutation)
    return f": {percent(score_summary(rows)['score'])} on {rows[0]['sut']}" if rows else ""


def render_dashboard(report: Report, coverage: Optional[pd.DataFrame] = None) -> str:
    """The page; `coverage` is the store's coverage records (none: an older store)."""
    head = report.verdict().split(":", 1)[0]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    warnings = "".join(
        f"<li>{escape(_within_results(w, report.results_dir))}</li>" for w in report.warnings
    )
    # The first screen (1280 x 900) holds the verdict, the finding groups, what each SUT ran as
    # release code, and throughput per cell family; the details follow.
    sections = [
        ("findings-section", "Findings", _findings(report)),
        ("suts", "Systems under test", _suts(report)),
        (
            "throughput-glance",
            "Throughput at a glance",
            throughput_glance(report.bench, report.gate),
        ),
        ("correctness", "Correctness", correctness_grid(report.checks, report.pool_families)),
        (
            "scenario",
            "Scenario feature coverage",
            coverage_section(pd.DataFrame() if coverage is None else coverage),
        ),
        ("coverage", "Coverage and capability matrix", _matrix(report)),
        ("throughput", "Throughput", _throughput(report)),
        ("api", "API overhead", _overhead(report)),
        ("regression", "Regression gate and history", _regressions(report)),
        (
            "mutation",
            "What kvh would not notice: the mutation score",
            mutation_html(report.mutation),
        ),
    ]
    body = "".join(
        f'<h2 id="{ident}">{escape(title)}</h2>{html}' for ident, title, html in sections
    )
    return _page(
        f"kvh report: {head}",
        f'<h1>kvh report</h1><p class="note">results folder '
        f"<code>{escape(report.results_dir.resolve().name)}</code>, "
        f'generated {now}; <a href="#mutation">what kvh would not notice</a> (the mutation '
        f"score{_score_of(report.mutation)})</p>"
        f'<div class="verdict {head}">{escape(report.verdict())}</div>'
        + (f"<h3>Skipped files</h3><ul>{warnings}</ul>" if warnings else "")
        + body,
    )
