"""`kvh report RESULTS_DIR`: the regression gate over a results store, an HTML dashboard and
a Markdown summary. Exit 1 when a regression, a correctness finding or lost release code (a
backend a SUT ran as its own code in its previous run, reports/real_code_history.py) is
present; exit 2 when the folder holds no record to judge (nothing to judge is not a pass)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.arguments import bounded_float
from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError

# pandas, pyarrow and the dashboard are imported where the report is built: a usage error
# costs no import.
if TYPE_CHECKING:
    from reports.gate import GateSettings
    from reports.store import Store


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
        help="where to write dashboard.html, coverage.html and summary.md "
        "(default RESULTS_DIR/report)",
    )
    parser.add_argument(
        "--threshold",
        type=bounded_float(0, float("inf")),
        default=0.10,
        help="smallest relative change reported (default 0.10)",
    )
    parser.add_argument(
        "--alpha",
        type=bounded_float(0, 1),
        default=0.01,
        help="significance level (default 0.01)",
    )
    parser.add_argument(
        "--max-cv",
        type=bounded_float(0, float("inf")),
        default=0.15,
        help="a cell whose robust CV (1.4826 MAD / median) is above this is noisy (default 0.15)",
    )
    parser.set_defaults(handler=main)


def settings_from(arguments: argparse.Namespace, known_runs: set[str]) -> GateSettings:
    from reports.gate import GateSettings

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
    from harness.report.families import pool_families
    from reports.atomic import write_text_atomic
    from reports.coverage_section import COVERAGE_PAGE
    from reports.dashboard import render_coverage_page, render_dashboard
    from reports.report_data import build_report
    from reports.report_summary import report_markdown
    from reports.store import load

    store = load(results)
    _refuse_nothing_to_judge(results, store)
    known = {str(r) for f in store.frames.values() for r in f["run_id"].unique()}
    report = build_report(store, results, out, settings_from(arguments, known))
    report.pool_families = pool_families()  # base kinds first
    for warning in report.warnings:
        print(f"kvh: warning: {warning}", file=sys.stderr)
    coverage = store.of("coverage")
    dashboard = write_text_atomic(out / "dashboard.html", render_dashboard(report, coverage))
    write_text_atomic(out / COVERAGE_PAGE, render_coverage_page(coverage))
    summary = report_markdown(report, str(dashboard))
    write_text_atomic(out / "summary.md", summary)
    print(summary, end="")
    print(f"dashboard: {dashboard}, summary: {out / 'summary.md'}")
    return EXIT_FINDINGS if report.failed else EXIT_OK


def _refuse_nothing_to_judge(results: Path, store: Store) -> None:
    """A folder without one readable record (empty, or only corrupt or foreign files) is an
    input error, not "PASS over 0 checks": a CI step pointed at the wrong folder must fail."""
    if any(len(frame) for frame in store.frames.values()):
        return
    if not store.warnings:
        raise UsageError(f"nothing to judge: {results} holds no kvh results files")
    first = " ".join(store.warnings[0].split())  # one line, whatever the reader's error said
    raise UsageError(
        f"nothing to judge: none of the {len(store.warnings)} results files in {results} reads "
        f"as kvh's (first: {first})"
    )
