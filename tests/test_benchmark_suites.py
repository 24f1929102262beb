"""The pytest-benchmark suites in benchmarks/ run, verify their writes and fill extra_info, both
timed (--benchmark-json) and with timing disabled (--benchmark-disable)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reports.outcome import Outcome

ROOT = Path(__file__).resolve().parent.parent
EXTRA_INFO = {"backend", "pool", "dtype", "sut", "engine", "era", "tokens", "layers", "device",
              "bytes_moved", "gbps", "outcome"}


def _suites(*arguments: str) -> subprocess.CompletedProcess:
    # A fresh pytest: pytest-benchmark takes a process with PYTEST_XDIST_WORKER set for an xdist
    # worker and writes no JSON there.
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "benchmarks"), "-q",
                           "-p", "no:cacheprovider", "--kvh-tokens", "16", *arguments],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=environment)


def test_timed_suites_write_complete_json(tmp_path) -> None:
    report = tmp_path / "bench.json"
    result = _suites(f"--benchmark-json={report}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    benchmarks = json.loads(report.read_text())["benchmarks"]
    assert benchmarks
    for entry in benchmarks:
        assert EXTRA_INFO <= set(entry["extra_info"]), entry["name"]
        assert entry["extra_info"]["outcome"] == Outcome.MEASURED and entry["extra_info"]["gbps"] > 0


def test_suites_run_with_timing_disabled() -> None:
    result = _suites("--benchmark-disable")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
