"""Store rows: the one place rows become a frame of a record kind and get their run metadata.

Every writer (`kvh run`, `kvh bench`, `kvh mutants`, `kvh cp`) and the pytest-benchmark reader
go through `records_frame` and `stamped`, so columns are validated against reports/schema.py
and metadata is filled the same way everywhere.
"""

from __future__ import annotations

import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from reports.outcome import normalised
from reports.schema import META_COLUMNS, kind_of, validate_columns, validate_row


def git_commit(cwd: Path | None = None) -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=cwd,
            text=True,
            capture_output=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


def records_frame(kind: str, rows: list[dict]) -> pd.DataFrame:
    """`rows`, each validated against `kind`, as a frame with the kind's columns in schema order
    (so a run without rows still has them)."""
    spec = kind_of(kind)
    for row in rows:
        validate_row(kind, row)
    extra = [column for row in rows for column in row if column not in spec.columns]
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*spec.columns, *extra])))


def normalise_outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """Legacy outcome spellings ("findings") in today's vocabulary (reports/outcome.py)."""
    if "outcome" in frame.columns:
        frame["outcome"] = frame["outcome"].map(
            lambda value: normalised(value) if isinstance(value, str) else value
        )
    return frame


def stamped(frame: pd.DataFrame, kind: str, meta: dict, writer: str) -> pd.DataFrame:
    """A copy of `frame` as rows of `kind`: columns validated, outcomes normalised, every optional
    and metadata column present, and `meta` stamped on every row."""
    spec = validate_columns(kind, frame.columns, stamped=meta.keys())
    frame = normalise_outcomes(frame.copy())
    for column in spec.optional:
        if column not in frame.columns:
            frame[column] = None
    # The run's metadata wins; a column the caller filled per row stays where meta is silent.
    values = {column: meta[column] for column in META_COLUMNS if column in meta}
    values.update(kind=kind, kind_version=spec.version, writer=writer)
    for column, value in values.items():
        frame[column] = value
    for column in META_COLUMNS:
        if column not in frame.columns:
            frame[column] = ""
    return frame


def text_of(value: object) -> str:
    """A stored text column's value as text: a column a row left empty reads back from Parquet
    as None (or NaN, in a frame merged from files that lack it)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value)
