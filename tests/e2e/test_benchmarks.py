"""pytest-benchmark in a fresh pytest: the suites in benchmarks/ run, verify their writes and fill
extra_info, both timed (--benchmark-json) and with timing disabled (--benchmark-disable); and
the results store ingests pytest-benchmark's JSON with its raw samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from reports.outcome import Outcome
from reports.store import load
from tests.conftest import REPO

EXTRA_INFO = {
    "backend",
    "pool",
    "dtype",
    "sut",
    "engine",
    "era",
    "tokens",
    "layers",
    "device",
    "bytes_moved",
    "gbps",
    "outcome",
}


def _suites(*arguments: str) -> subprocess.CompletedProcess:
    # A fresh pytest: pytest-benchmark takes a process with PYTEST_XDIST_WORKER set for an xdist
    # worker and writes no JSON there.
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(REPO / "benchmarks"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--kvh-tokens",
            "16",
            # The harness-cost suite at its smallest size (its own smoke test checks its figures).
            "--kvh-slots",
            "1024",
            "--kvh-profiles",
            "dev",
            "--kvh-examples",
            "2",
            # One short round each: this checks that the suites run and report, not their figures.
            "--benchmark-min-rounds=1",
            "--benchmark-max-time=0.001",
            "--benchmark-warmup=off",
            *arguments,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )


@pytest.mark.slow
def test_timed_suites_write_complete_json(tmp_path) -> None:
    report = tmp_path / "bench.json"
    result = _suites(f"--benchmark-json={report}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    benchmarks = json.loads(report.read_text())["benchmarks"]
    differential = [e for e in benchmarks if "test_differential_bench" in e["fullname"]]
    assert {e["name"].split("[")[0] for e in differential} == {
        "test_example",
        "test_baselines",
        "test_candidates",
    }
    assert all(e["stats"]["ops"] > 0 for e in differential)
    # The harness-cost suite times checks, not one write: its extra_info is its own.
    writes = [e for e in benchmarks if "test_write_bench" in e["fullname"]]
    assert writes
    for entry in writes:
        assert EXTRA_INFO <= set(entry["extra_info"]), entry["name"]
        assert (
            entry["extra_info"]["outcome"] == Outcome.MEASURED and entry["extra_info"]["gbps"] > 0
        )


@pytest.mark.slow
def test_suites_run_with_timing_disabled() -> None:
    result = _suites("--benchmark-disable")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.slow
def test_pytest_benchmark_json_is_ingested_with_raw_samples(tmp_path):
    (tmp_path / "test_tiny.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('tokens', [1, 64])\n"
        "def test_sum(benchmark, tokens):\n    benchmark.extra_info['pool'] = 'mha'\n"
        "    benchmark(sum, range(tokens))\n"
    )
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_tiny.py",
            "--benchmark-json",
            str(results / "pytest-benchmark.json"),
            "--benchmark-save-data",
            "--benchmark-min-rounds=5",
            "--benchmark-max-time=0.001",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
        # Under xdist the inner pytest would see PYTEST_XDIST_WORKER and pytest-benchmark
        # would switch itself off.
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
    )
    rows = load(results).of("pytest-benchmark")
    assert sorted(rows["name"]) == ["test_sum[1]", "test_sum[64]"]
    assert sorted(rows["tokens"]) == [1, 64] and set(rows["pool"]) == {"mha"}
    assert all(len(samples) >= 5 and min(samples) > 0 for samples in rows["samples_ns"])
