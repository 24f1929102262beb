"""Result records: one row per (scenario, candidate), written as Parquet.

Schema version 1 columns are listed in RECORD_COLUMNS; reports read files by this version.
"""
from __future__ import annotations

import platform
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pandas as pd

from reports.atomic import write_atomic

SCHEMA_VERSION = 1
RECORD_COLUMNS = (
    "schema_version", "run_id", "time", "git_commit", "host", "device", "sut", "backend", "mode",
    "pool", "era", "engine", "dtype", "scenario", "tokens", "outcome", "findings", "divergence",
    "divergence_pr", "write_ns", "bytes_moved", "seed",
)


def git_commit(cwd: Optional[Path] = None) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, text=True,
                              capture_output=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


def run_metadata(device: str, seed: int) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": new_run_id(),
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(Path(__file__).parent), "host": platform.node(),
            "device": device, "seed": seed}


def write_records(path: Path, rows: list[dict]) -> Path:
    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    return write_atomic(path, lambda temp: frame.to_parquet(temp, index=False))
