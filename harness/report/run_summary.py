"""The one summary of a `kvh run`, built from what the run stored, so that a run and a `--jobs`
parent (which reads its children's stores back) say the same things of the same cells: the
verdict, the table, findings, known divergences, skips, the era table, the exploration log and
the coverage section for summary.md, and the lines the verb prints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import pandas as pd

from backends.registry import Backend
from harness.report.cell_result import ERA_TABLE_SUT
from harness.report.coverage import coverage_markdown
from harness.report.divergence_lines import reproduced
from harness.report.era_table import era_table_markdown
from harness.report.exploration_log import exploration_markdown
from harness.report.families import pool_families
from harness.report.skip_lines import skip_lines
from reports.outcome import Outcome
from reports.records import records_frame, text_of
from reports.summary import (
    NOTHING_CHECKED,
    Interruption,
    SummaryInput,
    era_table_line,
    summary_markdown_table,
)
from reports.summary_screen import summary_markdown

# Findings printed to stdout; summary.md lists them all.
PRINTED_FINDINGS = 20


@dataclass(frozen=True)
class StoredRun:
    """What a run stored, as its summary reads it. `checks`: its `check` rows in the order the
    run checked them, era-table rows (sut ERA_TABLE_SUT) included, each with the `source` file
    it is stored in (its repro path is relative to that file's folder); `coverage`: its
    `coverage` rows; `exploration`: its `exploration` rows, None for a run that did not
    explore; `not_run`: why each SUT it named was not run (its `not-run` rows); `suts`: its
    `sut` rows, one per foreign SUT it loaded."""

    meta: dict
    checks: pd.DataFrame
    coverage: pd.DataFrame
    exploration: Optional[pd.DataFrame] = None
    not_run: tuple[str, ...] = ()
    suts: tuple[dict, ...] = ()


@dataclass(frozen=True)
class RunSummary:
    markdown: str  # summary.md
    stdout: list[str]  # the lines the verb prints, each one print()
    findings: int  # the rows with a finding, era-table rows included
    nothing_checked: bool = False  # the plan held no check (the verdict NOTHING CHECKED)


def _of_kind(kind: str, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`, or the kind's empty frame (its columns, no rows) when a run stored none."""
    return records_frame(kind, []) if frame.empty else frame


def repro_path(row: Mapping[str, object]) -> str:
    """A finding's repro file as a reader reaches it: beside the results file it is stored in;
    "" when it has none."""
    repro = text_of(row.get("repro"))
    return str(Path(text_of(row.get("source"))).parent / repro) if repro else ""


def finding_line(row: dict) -> str:
    """A finding as the run names it: subject, scenario, headline, repro file, and for an
    exploring run the seed and reproduce blob."""
    reproduce = text_of(row.get("reproduce"))
    return (
        f"{text_of(row.get('label'))} `{row['scenario']}`: {text_of(row.get('detail'))} "
        f"(repro: {repro_path(row) or 'none'})" + (f" {reproduce}" if reproduce else "")
    )


def run_summary(
    run: StoredRun,
    backends: Mapping[str, Backend],
    summary_path: Path,
    interrupted: Optional[Interruption] = None,
) -> RunSummary:
    """summary.md and the printed lines of `run`; `backends` are the call-site entries the run
    used (their declared divergences word the divergence lines), `summary_path` is where
    summary.md goes (the printed lines point there)."""
    rows = _of_kind("check", run.checks)
    era_rows = rows[rows["sut"] == ERA_TABLE_SUT]
    checks = rows[rows["sut"] != ERA_TABLE_SUT]
    # Only the columns repro_path reads: a default run's 30k rows as whole dicts cost a second.
    wanted = [column for column in ("repro", "source") if column in checks]
    checks = checks.assign(
        repro_path=[repro_path(row) for row in checks[wanted].to_dict("records")]
    )
    model_outcomes = tuple(era_rows["outcome"].tolist())
    findings = [
        finding_line(row)
        for row in rows[rows["outcome"] == Outcome.FINDING.value].to_dict("records")
    ]
    exploration = (
        None
        if run.exploration is None
        else exploration_markdown(
            _of_kind("exploration", run.exploration), run.meta["profile"], run.meta["seed"]
        )
    )
    sections = [("Era table", era_table_markdown(era_rows, backends))]
    if exploration is not None:
        sections.append(("Exploration", exploration))
    sections.append(("Coverage", coverage_markdown(_of_kind("coverage", run.coverage))))
    summary = SummaryInput(
        checks,
        run.meta,
        model_outcomes,
        tuple(findings),
        tuple(reproduced(checks, backends)),
        tuple(skip_lines(checks)),
        tuple(run.not_run),
        interrupted,
        tuple(run.suts),
        pool_families(),
        tuple((title, text) for title, text in sections if text),
    )
    markdown = summary_markdown(summary)
    stdout = [summary_markdown_table(checks)]
    stdout += [f"FINDING {line}" for line in findings[:PRINTED_FINDINGS]]
    if len(findings) > PRINTED_FINDINGS:
        stdout.append(
            f"... and {len(findings) - PRINTED_FINDINGS} more findings, see {summary_path}"
        )
    if exploration is not None:
        stdout.append(exploration)
    stdout += [f"NOT RUN {reason}" for reason in run.not_run]
    verdict = summary.verdict()
    stdout += [verdict, era_table_line(model_outcomes)]
    return RunSummary(markdown, stdout, len(findings), verdict.startswith(NOTHING_CHECKED))
