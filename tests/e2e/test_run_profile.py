"""`kvh run --profile`: Hypothesis per cell, examples
reported, failures saved with seed and blob."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_kvh


@pytest.mark.slow
def test_dev_profile_reports_examples_per_backend_and_pool(tmp_path):
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        "--profile",
        "dev",
        "--examples",
        "2",
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--backend",
        "plain",
        "--engine",
        "torch",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = (out / "summary.md").read_text()
    assert "## Exploration: profile dev, seed 0" in summary and "examples/s" in summary
    assert re.search(r"\| plain +\| mha +\| 2 +\| 1 +\|", summary)  # 2 examples, 1 named regression
    assert "mha/bf16/plain:extend: 2 examples" in result.stderr


@pytest.mark.slow
def test_profile_from_the_environment_and_a_bad_one_is_a_usage_error(tmp_path):
    environ = {**os.environ, "KVH_PROFILE": "weekly"}
    result = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--out", str(tmp_path)],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "unknown profile 'weekly'" in result.stderr


@pytest.mark.slow
def test_a_failure_prints_seed_and_blob_and_its_json_replays(tmp_path, fixture_sut):
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        "--profile",
        "ci",
        "--examples",
        "30",
        "--sut",
        fixture_sut("scenario_drop_page_tail"),
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--backend",
        "plain",
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    # The pinned reach scenario finds it too (its last slot is a page tail): the explored one.
    line = next(
        line
        for line in result.stdout.splitlines()
        if line.startswith("FINDING") and "`hypothesis-" in line
    )
    assert "seed 0, @reproduce_failure(" in line
    repro = next(path for path in (out / "repros").glob("*.json") if "hypothesis" in path.name)
    assert json.loads(repro.read_text())["scenario"]["geometry"]["layer_num"] == 1
    replay = run_kvh("repro", str(repro))
    assert replay.returncode == 1 and "reproduced: identical finding" in replay.stdout
