"""scripts/gpu_check.py end to end, in a subprocess, with its CPU fallback (Triton interpreted)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_gpu_check_cpu_fallback_writes_a_passing_results_file(tmp_path):
    out = tmp_path / "gpu_check.json"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "gpu_check.py"),
            "--cpu-interpret",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    payload = json.loads(out.read_text())
    assert payload["passed"] and payload["device"] == "cpu"
    assert {rule["scale"] for rule in payload["division_rules"]} == {"float", "tensor", "param"}
    assert {cell["pool"] for cell in payload["scenarios"]} == {"mha", "mla"}
    assert all(cell["ok"] for cell in payload["scenarios"])
    # The GPU timing paths ran through their fakes; the real-device tests skip on CPU.
    timing = {row["test"]: row for row in payload["timing_paths"]}
    assert timing["test_graph_replay_warms_up_on_a_side_stream_then_captures_once"]["ok"]
    assert all(row["ok"] for row in timing.values())
    assert {row["outcome"] for row in timing.values()} <= {"passed", "skipped"}
