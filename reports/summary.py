"""The run summary: a pool x dtype by era/engine table of
checks passed / findings, verdict first."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence

import pandas as pd

from reports.markdown import markdown_table
from reports.outcome import APART, Outcome, SkipKind, normalised, skip_kind_of
from reports.records import text_of

NO_CHECKS = "(no checks)"
# The verdict of a run whose plan held no check: every cell left out by design or not offered.
NOTHING_CHECKED = "NOTHING CHECKED"
# The outcomes a check row can have, in the order the counts are printed.
CHECK_OUTCOMES = (
    Outcome.PASS,
    Outcome.FINDING,
    Outcome.KNOWN_DIVERGENCE,
    Outcome.BOTH_RAISED,
    Outcome.SKIPPED,
    Outcome.UNEXPLORED,
)


def counts(outcomes: Iterable[str]) -> dict[Outcome, int]:
    """Rows per outcome; every row counts under exactly one outcome."""
    tally = Counter(Outcome(normalised(str(outcome))) for outcome in outcomes)
    return {outcome: tally.get(outcome, 0) for outcome in CHECK_OUTCOMES}


def by_design_mask(frame: pd.DataFrame, kinds: tuple[SkipKind, ...] = APART) -> pd.Series:
    """The skipped rows of `frame` of `kinds` (by default every kind the verdict counts apart:
    a declared trim of the plan, SkipKind.BY_DESIGN, and a pool kind the SUT does not offer,
    SkipKind.NOT_OFFERED): the verdict counts them apart, not as checks."""
    if frame.empty or "skip_kind" not in frame:
        return pd.Series(False, index=frame.index)
    row_kinds = frame["skip_kind"].map(skip_kind_of)
    return (frame["outcome"] == Outcome.SKIPPED.value) & row_kinds.isin(kinds)


def counted(frame: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The rows of `frame` that are checks, how many it left out by design, and how many are
    pool kinds the SUT does not offer."""
    if frame.empty:
        return frame, 0, 0
    apart = by_design_mask(frame)
    by_design = int(by_design_mask(frame, (SkipKind.BY_DESIGN,)).sum())
    return frame[~apart], by_design, int(apart.sum()) - by_design


def era_table_line(outcomes: Iterable[str]) -> str:
    """The era table's line beside the verdict, for a run and for a merged --jobs run alike."""
    return (
        f"era table: {counts_line(outcomes)} (each era's call-site model against the ground truth)"
    )


def counts_line(outcomes: Iterable[str], by_design: int = 0, not_offered: int = 0) -> str:
    """The one wording of the counts: the progress lines and the verdict print the same.
    `outcomes` are the checks' (they add up to the count); `by_design`: the rows a declared
    trim of the plan left out; `not_offered`: the rows of pool kinds the SUT does not offer;
    both said apart and not counted."""
    outcomes = list(outcomes)
    return _line(len(outcomes), counts(outcomes), by_design, not_offered)


def _line(checks: int, tally: Mapping[Outcome, int], by_design: int, not_offered: int) -> str:
    said = [f"{by_design} left out by design (out of focus)"] if by_design else []
    if not_offered:
        said.append(
            f"{not_offered} on pool kinds or backends the SUT does not offer (cannot apply)"
        )
    apart = f"; {', '.join(said)}, not counted" if said else ""
    return (
        f"{checks} checks: {tally[Outcome.PASS]} passed, {tally[Outcome.FINDING]} with "
        f"findings, {tally[Outcome.KNOWN_DIVERGENCE]} known divergences, "
        f"{tally[Outcome.BOTH_RAISED]} both raised, {tally[Outcome.SKIPPED]} skipped, "
        f"{tally[Outcome.UNEXPLORED]} unexplored{apart}"
    )


def rows_counts_line(rows: Iterable[Mapping[str, object]]) -> str:
    """counts_line of stored check rows (dicts, as a run collects them): by-design rows apart."""
    running = RunningCounts()
    for row in rows:
        running.add(row)
    return running.line()


class RunningCounts:
    """rows_counts_line of the rows added so far, kept as they come: a run prints it after every
    group, and reading every row again each time cost 2.5 s of a 20 s run."""

    def __init__(self) -> None:
        self.tally: Counter[Outcome] = Counter()
        self.apart: Counter[SkipKind] = Counter()

    def add(self, row: Mapping[str, object]) -> None:
        kind = skip_kind_of(row.get("skip_kind"))
        if row["outcome"] == Outcome.SKIPPED.value and kind in APART:
            self.apart[kind] += 1
        else:
            self.tally[Outcome(normalised(str(row["outcome"])))] += 1

    def line(self) -> str:
        checks = sum(self.tally.values())
        tally = {o: self.tally.get(o, 0) for o in CHECK_OUTCOMES}
        return _line(
            checks, tally, self.apart[SkipKind.BY_DESIGN], self.apart[SkipKind.NOT_OFFERED]
        )


def column_of(row: pd.Series) -> str:
    if row["sut"] == "builtin":
        return f"{row['era']}/{row['engine']}"
    return f"{row['sut']}[{row['era']}]"


def _cell(group: pd.DataFrame) -> str:
    passed, failed, known, skipped = _counts(group)
    if skipped == len(group):
        return "skip"
    return f"{passed}/{failed}" + (f" +{known}kd" if known else "")


def _counts(frame: pd.DataFrame) -> tuple[int, int, int, int]:
    """Checks passed, with a finding, explained by a known divergence, and skipped. A row may
    still say "findings" until every writer speaks the one vocabulary (reports/outcome.py)."""
    outcomes = frame["outcome"].map(normalised)
    return tuple(
        int((outcomes == outcome).sum())
        for outcome in (Outcome.PASS, Outcome.FINDING, Outcome.KNOWN_DIVERGENCE, Outcome.SKIPPED)
    )


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns pool, dtype, then one per era/engine (or foreign SUT); cells: passed/findings
    (+known); one row per pool and dtype."""
    frame = counted(frame)[0]  # a cell counted apart is no check: its table cell is blank
    if frame.empty:
        return pd.DataFrame()
    frame = frame.assign(column=frame.apply(column_of, axis=1))
    table = frame.groupby(["pool", "dtype", "column"], sort=False).apply(
        _cell, include_groups=False
    )
    table = table.unstack("column").fillna("")
    table.columns.name = None
    return table.reset_index()


def summary_markdown_table(frame: pd.DataFrame) -> str:
    """The check rows of `frame` as the pool x dtype by era/engine Markdown table."""
    return markdown_table(summary_table(frame), empty=NO_CHECKS)


@dataclass(frozen=True)
class Interruption:
    """A run stopped by a signal before its end: `done` of `total` `unit` ("groups" or "cells")
    finished, `unfinished` names the others, `planned` is how many checks the whole run planned
    (None: not known up front, as for an exploring run)."""

    signal: str  # SIGINT or SIGTERM
    done: int
    total: int
    unit: str
    unfinished: tuple[str, ...] = ()
    planned: Optional[int] = None


# Unfinished groups or cells the verdict line names; summary.md lists them all.
NAMED_UNFINISHED = 6


def _unfinished(interruption: Interruption) -> str:
    names = list(interruption.unfinished)
    if not names:
        return ""
    shown = ", ".join(names[:NAMED_UNFINISHED])
    more = len(names) - NAMED_UNFINISHED
    return f"; not finished: {shown}" + (f" and {more} more" if more > 0 else "")


def verdict(
    frame: pd.DataFrame,
    model_outcomes: Iterable[str] = (),
    not_run: Sequence[str] = (),
    interrupted: Optional[Interruption] = None,
) -> str:
    """INTERRUPTED when a signal stopped the run (`interrupted`: what finished and what did not;
    the counts are of the checks that finished, findings included); otherwise FAIL when a
    candidate or a call-site model itself (the era table) has a finding; otherwise INCOMPLETE when a
    named SUT was not run (`not_run`: why, one line each); otherwise NOTHING CHECKED when the
    plan held no check at all (a PASS is earned only by comparisons that could have failed), else
    PASS. Rows a declared trim of
    the plan left out (SkipKind.BY_DESIGN) and rows of pool kinds the SUT does not offer
    (SkipKind.NOT_OFFERED) are said apart and not counted as checks."""
    checks, by_design, not_offered = counted(frame)
    outcomes = checks["outcome"].tolist() if len(checks) else []
    model_outcomes = list(model_outcomes)
    model_findings = counts(model_outcomes)[Outcome.FINDING]
    if interrupted is not None:
        planned = (
            f" ({interrupted.planned} checks planned)" if interrupted.planned is not None else ""
        )
        head = (
            f"INTERRUPTED ({interrupted.signal}) after {interrupted.done} of "
            f"{interrupted.total} {interrupted.unit}{planned}"
        )
    elif counts(outcomes)[Outcome.FINDING] or model_findings:
        head = "FAIL"
    elif not_run:
        head = "INCOMPLETE"
    else:
        head = NOTHING_CHECKED if not outcomes and not model_outcomes else "PASS"
    against_model = (
        f"; {model_findings} findings against the call-site models" if model_findings else ""
    )
    missing = f"; {len(not_run)} SUT(s) not run" if not_run else ""
    unfinished = _unfinished(interrupted) if interrupted is not None else ""
    counts_said = counts_line(outcomes, by_design, not_offered)
    return f"{head}: {counts_said}{against_model}{missing}{unfinished}"


def release_code_of(row: Mapping[str, object]) -> list[str]:
    """The backends a `sut` row says ran as the SUT's own release code."""
    text = text_of(row.get("real_code"))
    return text.split(",") if text else []


def doors_driven(row: Mapping[str, object]) -> str:
    """A `sut` row's write doors driven, `N of M`; "" for a SUT without a package source (the
    columns read back empty: None, or NaN in a merged frame)."""
    doors, driven = row.get("write_doors"), row.get("write_doors_driven")
    if doors is None or doors != doors:
        return ""
    return f"{int(driven)} of {int(doors)}"


def door_lines_run(row: Mapping[str, object]) -> str:
    """A `sut` row's write doors' lines run of those that can run here, and those that cannot,
    from a `kvh run --coverage`; "" for a run that did not measure them (None, or NaN)."""
    run = row.get("door_lines_run")
    if run is None or run != run:
        return ""
    reachable = int(run) + int(row["door_lines_not_reached"])
    return f"{int(run)} of {reachable} ({int(row['door_lines_cpu_unreachable'])} cannot run here)"


def sut_line(row: Mapping[str, object]) -> str:
    """One loaded SUT of a run: its version and era, the backends its own release code runs and
    those that ran as their model (with why), and its write doors driven."""
    real, doors = release_code_of(row), doors_driven(row)
    missing = text_of(row.get("real_code_missing"))
    return (
        f"{row['sut']}: version {row['version'] or 'unknown'}, era {row['era'] or 'none'}; "
        + (f"release code for: {', '.join(real)}" if real else "no release code run")
        + (
            f"; as the call-site model, its release class not imported: {missing}"
            if missing
            else ""
        )
        + (f"; write doors driven: {doors}" if doors else "")
    )


@dataclass(frozen=True)
class SummaryInput:
    """Everything summary.md says, as harness/report/run_summary.py gathers it from what a run
    stored (a run and a --jobs parent alike). `checks`: the candidates' check rows (no era-table
    row), a finding's with its `repro_path` (the repro file as a reader reaches it);
    `families`: each pool kind's family, in the order the families are shown (base kinds
    first); `sections`: the folded sections after the lists (title, Markdown), such as the era
    table and the coverage."""

    checks: pd.DataFrame
    meta: Mapping[str, object]
    model_outcomes: tuple[str, ...] = ()
    finding_lines: tuple[str, ...] = ()
    divergence_lines: tuple[str, ...] = ()
    skip_lines: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()
    interrupted: Optional[Interruption] = None
    suts: tuple[Mapping[str, object], ...] = ()
    families: Mapping[str, str] = field(default_factory=dict)
    sections: tuple[tuple[str, str], ...] = ()

    def verdict(self) -> str:
        return verdict(self.checks, self.model_outcomes, self.not_run, self.interrupted)
