"""The results store: a folder of immutable Parquet files, one per (run, writer, kind).

`append` writes a new uniquely named file atomically, so concurrent writers (pytest-xdist
workers, two CI jobs on one folder) never clobber each other; nothing is ever rewritten.
`load` reads every file back, skipping a corrupt or foreign file with a warning.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reports.atomic import write_atomic
from reports.host_class import host_class
from reports.pytest_benchmark import is_pytest_benchmark, rows_from_pytest_benchmark
from reports.records import git_commit, new_run_id, normalise_outcomes, stamped
from reports.schema import (
    KINDS,
    LEGACY_CHECK_COLUMNS,
    STORE_FORMAT,
    STORE_VERSION,
    kind_of,
)

METADATA_KEY = b"kvh"
# JSON files that live in a results folder but are not results: read by their own code.
NOT_RESULTS_JSON = ("capabilities.json",)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def device_name(device: str) -> str:
    """A human name for `device`: the accelerator's model, or the host CPU's."""
    if device.startswith("cpu"):
        return platform.processor() or platform.machine()
    import torch  # only for accelerators, so reading reports never needs torch

    backend = getattr(torch, device.split(":", 1)[0], None)
    try:
        return str(backend.get_device_name(torch.device(device)))
    except (AttributeError, RuntimeError, AssertionError):
        return device


def run_meta(
    device: str,
    seed: int,
    profile: str = "default",
    sut_version: str = "",
    run_id: Optional[str] = None,
) -> dict:
    """Metadata of one run, stamped on every row it appends to the store."""
    return {
        "run_id": run_id or new_run_id(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(Path(__file__).parent),
        "host": platform.node(),
        "device": device,
        "device_name": device_name(device),
        "torch_version": _version("torch"),
        "triton_version": _version("triton"),
        "host_class": host_class(),
        "sut_version": sut_version,
        "profile": profile,
        "seed": seed,
    }


def _writer() -> str:
    return f"{platform.node()}:{os.getpid()}:{os.environ.get('PYTEST_XDIST_WORKER', '')}"


def _file_name(kind: str, meta: dict) -> str:
    raw = f"{kind}-{meta['run_id']}-{platform.node()}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", raw) + ".parquet"


def append(results_dir: Path, frame: pd.DataFrame, kind: str, meta: dict) -> Path:
    """Write `frame` as a new immutable file of record `kind` in `results_dir`; its path.
    SchemaError (a ValueError) when a column is undeclared for `kind` or a required one missing."""
    spec = kind_of(kind)
    if "run_id" not in meta or "time" not in meta:
        raise ValueError("meta needs run_id and time (see reports.store.run_meta)")
    frame = stamped(frame, kind, meta, _writer())
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    header = {
        "format": STORE_FORMAT,
        "version": STORE_VERSION,
        "kind": kind,
        "kind_version": spec.version,
        "meta": {k: str(v) for k, v in meta.items()},
    }
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(header).encode()}
    )
    path = Path(results_dir) / _file_name(kind, meta)
    return write_atomic(path, lambda temp: pq.write_table(table, temp))


@dataclass
class Store:
    """Every readable record of a results folder, one frame per kind, and what was skipped."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def of(self, kind: str) -> pd.DataFrame:
        return self.frames.get(kind, pd.DataFrame())


def _read_parquet(path: Path) -> tuple[str, pd.DataFrame]:
    table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    frame = table.to_pandas()
    if raw is None:
        # `kvh run --out` before the store existed: schema_version 1 check records.
        if set(LEGACY_CHECK_COLUMNS) <= set(frame.columns) and set(frame["schema_version"]) <= {1}:
            return "check", normalise_outcomes(frame.assign(kind="check", kind_version=1))
        raise ValueError("not a kvh results file (no kvh metadata)")
    header = json.loads(raw)
    if header.get("format") != STORE_FORMAT or header.get("kind") not in KINDS:
        raise ValueError(f"unknown format or kind {header.get('format')}/{header.get('kind')}")
    if int(header.get("kind_version", 0)) > KINDS[header["kind"]].version:
        raise ValueError(
            f"{header['kind']} version {header['kind_version']} is newer than this "
            f"kvh reads ({KINDS[header['kind']].version})"
        )
    # kvh's metadata on other columns (a file rewritten by another tool, or forged): what the
    # report reads of every record (its run and time, the kind's required columns) must be there.
    missing = [c for c in ("run_id", "time", *KINDS[header["kind"]].required) if c not in frame]
    if missing:
        raise ValueError(f"carries kvh's {header['kind']} metadata but lacks columns {missing}")
    return header["kind"], normalise_outcomes(frame)


def _read_json(path: Path) -> Optional[tuple[str, pd.DataFrame]]:
    payload = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(payload, dict) and payload.get("format") == "kvh-repro":
        return None
    if not is_pytest_benchmark(payload):
        raise ValueError("not a pytest-benchmark JSON file")
    return "pytest-benchmark", rows_from_pytest_benchmark(payload, source=path.name)


def load(results_dir: Path) -> Store:
    """Read every results file under `results_dir`; a file that cannot be read is a warning."""
    store, parts = Store(), {}
    files = sorted(Path(results_dir).rglob("*.parquet")) + sorted(
        p for p in Path(results_dir).rglob("*.json") if p.name not in NOT_RESULTS_JSON
    )
    for path in files:
        if path.name.startswith("."):
            continue  # a temp file of a write in progress
        try:
            read = _read_parquet(path) if path.suffix == ".parquet" else _read_json(path)
        except Exception as error:  # any unreadable file is skipped, never fatal
            store.warnings.append(f"skipped {path}: {type(error).__name__}: {error}")
            continue
        if read is not None and not read[1].empty:
            parts.setdefault(read[0], []).append(read[1].assign(source=str(path)))
    for kind, frames in parts.items():
        frame = pd.concat(frames, ignore_index=True)
        frame["time"] = pd.to_datetime(frame["time"], utc=True, errors="coerce", format="mixed")
        store.frames[kind] = frame
    return store
