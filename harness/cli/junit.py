"""JUnit XML for CI pages (`--junit FILE` on run, bench and mutants): one test case per cell.

A cell is the group of result rows that share the verb's cell columns (for `kvh run`: pool,
dtype, backend, mode and candidate; for `kvh bench`: the timed cell, over its cache states; for
`kvh mutants`: the mutant). Each verb's `CaseRules` say which outcomes fail, err or skip a
case: a run cell with a finding fails with its first finding and the `kvh repro` command that
replays it, a bench cell with a finding fails and one in error errs, a surviving mutant fails
and an equivalent one is skipped, each with its reason; anything else passes. CI systems
(GitHub, GitLab, Jenkins) render this file as a test report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from reports.atomic import write_atomic
from reports.outcome import MutantOutcome, Outcome

FAILED = frozenset({Outcome.FINDING.value})
# The columns that make one `kvh run` cell (and candidate) one test case.
RUN_CELL = ("pool", "dtype", "backend", "mode", "sut", "era", "engine")
MUTANT_FAILED = frozenset({MutantOutcome.SURVIVED.value, MutantOutcome.EXHAUSTED.value})
# Never run: a case all of whose rows are these is skipped. `kvh run` writes no error rows; the
# set keeps the skip it always gave one.
NOT_RUN = frozenset({Outcome.SKIPPED.value, Outcome.UNEXPLORED.value, Outcome.ERROR.value})
MESSAGE_CHARS = 500


@dataclass(frozen=True)
class CaseRules:
    """How one verb's rows become test cases. A case fails when any row's outcome is in
    `failed`, else errs when any is in `errored`, else is skipped when every one is in
    `not_run`. `reason` is the column that says why; `message` and `text` word the failure
    from `name` (the case), `outcome`, `reason`, `body` (the reason and the replay command),
    `failed` and `rows` (how many rows fail, of how many)."""

    failed: frozenset[str]
    errored: frozenset[str] = frozenset()
    not_run: frozenset[str] = NOT_RUN
    reason: str = "detail"
    message: str = "{reason}"
    text: str = "{failed} of {rows} rows: {body}"


RULES = {
    "run": CaseRules(FAILED),
    # A bench cell in error has no numbers and says why in `error` (a call site the SUT
    # refuses, e.g. SGLang's SWA pool asserting swa_loc); its cache states share one verdict.
    "bench": CaseRules(
        FAILED,
        errored=frozenset({Outcome.ERROR.value}),
        not_run=NOT_RUN - {Outcome.ERROR.value},
        reason="error",
        text="{body}",
    ),
    # One row per mutant: the message names it, as a CI page lists only messages.
    "mutants": CaseRules(
        MUTANT_FAILED,
        not_run=frozenset({MutantOutcome.EQUIVALENT.value}),
        message="mutant {name} {outcome}: {reason}",
        text="{body}",
    ),
}


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _failure(
    case: ElementTree.Element, name: str, bad: pd.DataFrame, rows: int, rules: CaseRules
) -> None:
    first = bad.iloc[0]
    outcome, reason, repro = (_text(first.get(c)) for c in ("outcome", rules.reason, "repro"))
    words = dict(name=name, outcome=outcome, reason=reason, failed=len(bad), rows=rows)
    words["body"] = reason + (f"\nreplay: kvh repro {repro}" if repro else "")
    failure = ElementTree.SubElement(
        case,
        "failure",
        message=rules.message.format(**words)[:MESSAGE_CHARS] or outcome,
        type=outcome,
    )
    failure.text = rules.text.format(**words)


def _why(rows: pd.DataFrame, rules: CaseRules) -> str:
    first = rows.iloc[0]
    return (_text(first.get(rules.reason)) or _text(first["outcome"]))[:MESSAGE_CHARS]


def junit_tree(
    frame: pd.DataFrame,
    suite: str,
    cell_columns: Sequence[str],
    failed: Optional[set[str]] = None,
) -> ElementTree.ElementTree:
    """The test cases of `frame` under the rules of verb `suite`; `failed`, when given,
    replaces the outcomes that fail a case."""
    rules = RULES.get(suite, RULES["run"])
    if failed is not None:
        rules = replace(rules, failed=frozenset(failed))
    root = ElementTree.Element("testsuites", name=f"kvh {suite}")
    cases = ElementTree.SubElement(root, "testsuite", name=f"kvh {suite}")
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    if rules.errored:
        counts["errors"] = 0
    columns = [column for column in cell_columns if column in frame.columns]
    groups = frame.groupby(columns, sort=False, dropna=False) if columns and len(frame) else []
    for key, rows in groups:
        key = key if isinstance(key, tuple) else (key,)
        name = "/".join(_text(part) for part in key)
        case = ElementTree.SubElement(cases, "testcase", classname=f"kvh.{suite}", name=name)
        counts["tests"] += 1
        outcomes = rows["outcome"].astype(str)
        bad, errored = rows[outcomes.isin(rules.failed)], rows[outcomes.isin(rules.errored)]
        if len(bad):
            _failure(case, name, bad, len(rows), rules)
            counts["failures"] += 1
        elif len(errored):
            error = ElementTree.SubElement(
                case, "error", message=_why(errored, rules), type=_text(errored.iloc[0]["outcome"])
            )
            error.text = _text(errored.iloc[0].get(rules.reason))
            counts["errors"] += 1
        elif outcomes.isin(rules.not_run).all():
            ElementTree.SubElement(case, "skipped", message=_why(rows, rules))
            counts["skipped"] += 1
    for element in (root, cases):
        element.attrib.update({name: str(value) for name, value in counts.items()})
    return ElementTree.ElementTree(root)


def write_junit(
    path: Path,
    frame: pd.DataFrame,
    suite: str,
    cell_columns: Sequence[str],
    failed: Optional[set[str]] = None,
) -> Path:
    tree = junit_tree(frame, suite, cell_columns, failed)
    return write_atomic(path, lambda temp: tree.write(temp, encoding="utf-8", xml_declaration=True))
