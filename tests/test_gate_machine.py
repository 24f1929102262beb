"""The regression gate compares a cell only within one machine (reports/schema.py
MACHINE_COLUMNS): a sharded nightly job whose cell moved to another GPU is "new", with the
difference named, never a regression; on the same GPU the same slowdown is one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from harness.cli import main as kvh
from reports.gate import GateSettings
from reports.host_class import host_class
from reports.pytest_benchmark import rows_from_pytest_benchmark
from reports.report_data import build_report
from reports.store import append, load, run_meta

A100, H200 = "NVIDIA A100-SXM4-80GB", "NVIDIA H200"


def _night(results: Path, night: int, device_name: str, factor: float, **meta: str) -> None:
    """One nightly run of one cuda bench cell on `device_name`, 400 samples around
    20 us x `factor`."""
    rng = np.random.default_rng(night)
    samples = 20_000.0 * factor * np.exp(0.01 * rng.standard_normal(400))
    row = {
        "backend": "triton",
        "pool": "mha",
        "dtype": "bf16",
        "sut": "builtin",
        "engine": "triton",
        "era": "current",
        "tokens": 256,
        "device": "cuda",
        "mode": "extend",
        "samples_ns": samples.tolist(),
    }
    stamp = {
        **run_meta("cpu", seed=0, run_id=f"night-{night}"),
        "time": f"2025-03-{night + 1:02d}T03:00:00+00:00",
        "device": "cuda",
        "device_name": device_name,
        **meta,
    }
    append(results, pd.DataFrame([row]), "bench", stamp)


def _gate(results: Path, tmp_path: Path, settings: GateSettings = GateSettings()) -> pd.Series:
    gate = build_report(load(results), results, tmp_path / "out", settings).gate
    assert len(gate) == 1  # one cell, whatever machines it ran on
    return gate.iloc[0]


def test_another_gpu_is_never_a_baseline_even_2x_slower(tmp_path):
    results = tmp_path / "results"
    for night in range(5):
        _night(results, night, A100, 1.0)
    _night(results, 5, H200, 2.0)

    row = _gate(results, tmp_path)
    assert row["status"] == "new" and row["baseline_runs"] == 0
    assert row["detail"] == f"no baseline on this machine (device_name {H200} vs {A100})"
    assert row["device_name"] == H200 and np.isnan(row["ratio"])
    assert len(row["history"]) == 1  # the trend is this machine's runs only

    # The reader is told: exit 0 (nothing judged), and the summary names the difference.
    out = tmp_path / "report"
    assert kvh(["report", str(results), "--out", str(out)]) == 0
    summary = (out / "summary.md").read_text()
    assert "0 throughput regressions" in summary and "1 new cells" in summary
    section = summary.split("## No baseline on this machine (not judged)")[1]
    assert f"device_name {H200} vs {A100}" in section.split("##")[0]
    assert f"device_name {H200} vs {A100}" in (out / "dashboard.html").read_text()


def test_the_same_gpu_2x_slower_is_a_regression(tmp_path):
    results = tmp_path / "results"
    for night in range(5):
        _night(results, night, H200, 1.0)
    _night(results, 5, H200, 2.0)

    row = _gate(results, tmp_path)
    assert row["status"] == "regression" and row["detail"] == ""
    assert row["baseline_runs"] == 5 and 1.9 < row["ratio"] < 2.1 and row["p_value"] < 1e-6


def test_the_baseline_is_this_machines_runs_among_others(tmp_path):
    # The cell's shard alternates between GPUs, the H200 nights twice as slow (a made-up
    # machine difference): judged against its own runs the latest H200 night is unchanged;
    # against the last 5 runs of any machine it would be a 2x regression.
    results = tmp_path / "results"
    for night in range(8):
        _night(results, night, H200 if night % 2 else A100, 2.0 if night % 2 else 1.0)
    row = _gate(results, tmp_path)
    assert row["status"] == "unchanged" and row["baseline_runs"] == 3
    assert 0.95 < row["ratio"] < 1.05 and len(row["history"]) == 4

    # A named baseline run on the other machine is no baseline either, and says why.
    named = _gate(results, tmp_path, GateSettings(baseline="night-4"))
    assert named["status"] == "new"
    assert named["detail"] == f"no baseline on this machine (device_name {H200} vs {A100})"


def test_every_machine_column_keys_the_baseline_and_old_rows_read_as_unrecorded(tmp_path):
    results = tmp_path / "results"
    for night in range(3):
        _night(results, night, H200, 1.0, torch_version="2.8.0")
    for path in results.glob("*.parquet"):  # written before host_class existed
        old = pq.read_table(path)
        pq.write_table(old.drop(["host_class"]), path)
    old_rows = load(results).of("bench")
    assert len(old_rows) == 3 and "host_class" not in old_rows
    _night(results, 3, H200, 2.0, host_class="AMD EPYC 9654 x192", torch_version="2.9.0")
    row = _gate(results, tmp_path)
    assert row["status"] == "new"
    assert row["detail"] == (
        "no baseline on this machine (torch_version 2.9.0 vs 2.8.0; "
        "host_class AMD EPYC 9654 x192 vs unrecorded)"
    )


def test_host_class_is_the_cpu_model_and_never_raises(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC  9654 96-Core Processor\n")
    assert host_class(cpuinfo).startswith("AMD EPYC 9654 96-Core Processor x")
    unreadable = host_class(tmp_path / "absent")
    assert unreadable and "model name" not in unreadable
    assert run_meta("cpu", seed=0)["host_class"] == host_class()


def test_pytest_benchmark_rows_carry_the_machine_key():
    payload = {
        "datetime": "2025-03-01T03:00:00",
        "machine_info": {
            "node": "ci-7",
            "cpu": {"brand_raw": "AMD EPYC 9654 96-Core Processor", "count": 192},
            "torch_version": "2.9.0",
        },
        "commit_info": {"id": "abc"},
        "benchmarks": [
            {"name": "test_write", "stats": {"median": 1e-5, "data": [1e-5], "rounds": 1}}
        ],
    }
    row = rows_from_pytest_benchmark(payload, source="bench.json").iloc[0]
    assert row["device_name"] == "AMD EPYC 9654 96-Core Processor"
    assert row["host_class"] == "AMD EPYC 9654 96-Core Processor x192"
    assert (row["torch_version"], row["triton_version"]) == ("2.9.0", "")
