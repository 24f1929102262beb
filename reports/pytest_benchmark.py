"""pytest-benchmark JSON files as store rows (kind "pytest-benchmark").

Raw samples exist only when pytest-benchmark ran with --benchmark-save-data; without them a
row keeps its median as its single sample, which the gate can never call significant.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd

from reports.host_class import host_class_of
from reports.records import records_frame, stamped
from reports.schema import CELL_COLUMNS


def is_pytest_benchmark(payload: Any) -> bool:
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("benchmarks"), list)
        and "machine_info" in payload
        and "datetime" in payload
    )


def _samples_ns(stats: dict) -> list[float]:
    data = stats.get("data") or [stats["median"]]
    return [float(seconds) * 1e9 for seconds in data]


def _machine_key(machine: dict) -> dict:
    """The gate's machine key (reports/schema.py MACHINE_COLUMNS) from pytest-benchmark's
    machine_info: the CPU py-cpuinfo saw, as `reports.store.run_meta` describes it, so one host
    has one class; torch and triton versions only where a `pytest_benchmark_update_machine_info`
    hook recorded them, else "" (a file without them is compared only with files without them)."""
    cpu = machine.get("cpu") or {}
    brand = str(cpu.get("brand_raw") or "")
    count = cpu.get("count")
    return {
        "device_name": brand,
        "torch_version": str(machine.get("torch_version") or ""),
        "triton_version": str(machine.get("triton_version") or ""),
        "host_class": host_class_of(brand, count if isinstance(count, int) else None)
        if brand
        else "",
    }


def rows_from_pytest_benchmark(payload: dict, source: str) -> pd.DataFrame:
    """One row per benchmark; the run id is derived from the file so re-reading is stable."""
    commit = payload.get("commit_info") or {}
    machine = payload.get("machine_info") or {}
    digest = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:8]
    meta = {
        "run_id": f"pytest-benchmark-{payload['datetime']}-{digest}",
        "time": payload["datetime"],
        "git_commit": str(commit.get("id", ""))[:12],
        "host": machine.get("node", ""),
        **_machine_key(machine),
    }
    rows = []
    for bench in payload["benchmarks"]:
        labels = {**(bench.get("params") or {}), **(bench.get("extra_info") or {})}
        cell = {column: labels.get(column) for column in CELL_COLUMNS}
        cell["device"] = cell["device"] or "cpu"
        cell["sut"] = cell["sut"] or "pytest-benchmark"
        cell["backend"] = cell["backend"] or bench["name"]
        rows.append(
            {
                **cell,
                "name": bench["name"],
                "group": bench.get("group"),
                "fullname": bench.get("fullname"),
                "rounds": bench["stats"].get("rounds"),
                "samples_ns": _samples_ns(bench["stats"]),
            }
        )
    return stamped(records_frame("pytest-benchmark", rows), "pytest-benchmark", meta, writer=source)
