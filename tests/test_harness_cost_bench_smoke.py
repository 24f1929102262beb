"""The harness-cost benchmark (benchmarks/test_harness_cost_bench.py) at its smallest size, as
CI runs it: a 2^10-slot pool and two examples at --profile dev, timed once. No threshold: the
benchmark must run and its checks must pass, and the stored JSON must carry the raw samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_harness_cost_bench_runs_at_its_smallest_size(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
        str(ROOT / "benchmarks" / "test_harness_cost_bench.py"),
        "--kvh-slots", "1024", "--kvh-profiles", "dev", "--kvh-examples", "2",
        "--benchmark-save-data", f"--benchmark-json={out}",
    ]  # fmt: skip
    # pytest-benchmark writes no JSON in a process it takes for an xdist worker (PYTEST_XDIST_*).
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=environment
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    benchmarks = {b["name"]: b for b in json.loads(out.read_text())["benchmarks"]}
    assert set(benchmarks) == {
        "test_check_against_pool_size[1024]",
        "test_examples_per_second[dev]",
        "test_draws_per_second[dev]",
    }
    check = benchmarks["test_check_against_pool_size[1024]"]
    assert len(check["stats"]["data"]) == 5  # the raw samples, one a round
    # 2^10 narrow slots are under REUSE_MIN_BYTES: every pool built, and counted as such
    assert check["extra_info"]["pool_cache"]["built: small"] > 0
    assert benchmarks["test_examples_per_second[dev]"]["extra_info"]["examples_per_s"] > 0
    assert benchmarks["test_draws_per_second[dev]"]["extra_info"]["draws_per_s"] > 0
