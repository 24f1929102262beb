"""JUnit XML for CI pages (`--junit FILE` on run, bench and mutants): one test case per cell.

A cell is the group of result rows that share the verb's cell columns (for `kvh run`: pool,
dtype, backend, mode and candidate). A cell with a finding is a failure carrying its first
finding and the `kvh repro` command that replays it; a cell whose rows were all skipped or
unexplored (or, in a bench, in error) is skipped with its reason; anything else passes. For
mutants a survivor is the failure. CI systems (GitHub, GitLab,
Jenkins) render this file as a test report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Sequence

import pandas as pd

from reports.atomic import write_atomic
from reports.outcome import MutantOutcome, Outcome

FAILED = {Outcome.FINDING.value}
MUTANT_FAILED = {MutantOutcome.SURVIVED.value, MutantOutcome.EXHAUSTED.value}
# A bench cell in error has no numbers and says why (a call site the SUT refuses, e.g. SGLang's
# SWA pool asserting swa_loc): reported like a skip, with its reason.
NOT_RUN = {Outcome.SKIPPED.value, Outcome.UNEXPLORED.value, Outcome.ERROR.value}


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def junit_tree(
    frame: pd.DataFrame, suite: str, cell_columns: Sequence[str], failed: set[str] = FAILED
) -> ElementTree.ElementTree:
    """`failed` names the outcomes that fail a cell (for mutants: a survivor, not a kill)."""
    root = ElementTree.Element("testsuites", name=f"kvh {suite}")
    cases = ElementTree.SubElement(root, "testsuite", name=f"kvh {suite}")
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    columns = [column for column in cell_columns if column in frame.columns]
    groups = frame.groupby(columns, sort=False, dropna=False) if columns and len(frame) else []
    for key, rows in groups:
        key = key if isinstance(key, tuple) else (key,)
        name = "/".join(_text(part) for part in key)
        case = ElementTree.SubElement(cases, "testcase", classname=f"kvh.{suite}", name=name)
        counts["tests"] += 1
        outcomes = rows["outcome"].astype(str)
        bad = rows[outcomes.isin(failed)]
        if len(bad):
            first = bad.iloc[0]
            detail = _text(first.get("detail"))
            repro = _text(first.get("repro"))
            body = detail + (f"\nreplay: kvh repro {repro}" if repro else "")
            failure = ElementTree.SubElement(
                case,
                "failure",
                message=detail[:500] or _text(first["outcome"]),
                type=_text(first["outcome"]),
            )
            failure.text = f"{len(bad)} of {len(rows)} rows: {body}"
            counts["failures"] += 1
        elif outcomes.isin(NOT_RUN).all():
            reason = _text(rows.iloc[0].get("detail")) or _text(rows.iloc[0]["outcome"])
            ElementTree.SubElement(case, "skipped", message=reason[:500])
            counts["skipped"] += 1
    for element in (root, cases):
        element.attrib.update({name: str(value) for name, value in counts.items()})
    return ElementTree.ElementTree(root)


def write_junit(
    path: Path,
    frame: pd.DataFrame,
    suite: str,
    cell_columns: Sequence[str],
    failed: set[str] = FAILED,
) -> Path:
    tree = junit_tree(frame, suite, cell_columns, failed)
    return write_atomic(path, lambda temp: tree.write(temp, encoding="utf-8", xml_declaration=True))
