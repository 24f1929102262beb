"""`kvh report RESULTS_DIR`: the regression gate over a results store, an HTML dashboard and
a Markdown summary. Exit 1 when a regression or a correctness finding is present."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from reports.atomic import write_text_atomic
from reports.dashboard import render_dashboard
from reports.gate import GateSettings
from reports.report_data import build_report
from reports.report_summary import report_markdown
from reports.store import load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results_dir", type=Path, help="the results store (a folder of kvh run/bench outputs)"
    )
    parser.add_argument(
        "--baseline",
        default="last:5",
        help="last:N (median of the last N runs of each cell, default last:5) or a run id",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where to write dashboard.html and summary.md (default RESULTS_DIR/report)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.10,
        help="smallest relative change reported (default 0.10)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.01, help="significance level (default 0.01)"
    )
    parser.add_argument(
        "--max-cv",
        type=float,
        default=0.15,
        help="a cell whose robust CV (1.4826 MAD / median) is above this is noisy (default 0.15)",
    )
    parser.set_defaults(handler=main)


def settings_from(arguments: argparse.Namespace, known_runs: set[str]) -> GateSettings:
    settings = GateSettings(
        arguments.baseline, arguments.threshold, arguments.alpha, arguments.max_cv
    )
    try:
        last = settings.last_n()
    except ValueError:
        raise UsageError(
            f"--baseline {arguments.baseline}: use last:N with N >= 1, or a run id"
        ) from None
    if last is None and arguments.baseline not in known_runs:
        raise UsageError(f"--baseline {arguments.baseline} is not a run in the results folder")
    if not 0 < arguments.alpha < 1 or arguments.threshold < 0 or arguments.max_cv <= 0:
        raise UsageError("--alpha must lie in (0, 1), --threshold >= 0 and --max-cv > 0")
    return settings


def main(arguments: argparse.Namespace) -> int:
    results = arguments.results_dir
    if not results.is_dir():
        raise UsageError(f"results folder {results} does not exist or is not a folder")
    out = arguments.out or results / "report"
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    store = load(results)
    known = {str(r) for f in store.frames.values() for r in f["run_id"].unique()}
    report = build_report(store, results, out, settings_from(arguments, known))
    for warning in report.warnings:
        print(f"kvh: warning: {warning}", file=sys.stderr)
    dashboard = write_text_atomic(
        out / "dashboard.html", render_dashboard(report, store.of("coverage"))
    )
    summary = report_markdown(report, str(dashboard))
    write_text_atomic(out / "summary.md", summary)
    print(summary, end="")
    print(f"dashboard: {dashboard}, summary: {out / 'summary.md'}")
    return EXIT_FINDINGS if report.failed else EXIT_OK
