"""A backend is one module: a synthetic one (tests/fixtures/synthetic_backend/synthetic_flex.py),
found through KVH_BACKEND_PATHS with no other file touched, shows in `kvh matrix`, runs and passes
in `kvh run`, and has its call sites compared by the census (`kvh sut check`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.registry import BACKEND_PATHS_VARIABLE, BACKENDS, backend_modules, collect
from harness.sut.probe.census import census
from harness.sut.probe.census_call_sites import backend_models
from harness.sut.probe.census_compare import compare, files_present
from tests.conftest import FIXTURES, REPO, SGLANG_INSTALL_HINT, installed_sglang_root

pytestmark = pytest.mark.e2e

FOLDER = FIXTURES / "synthetic_backend"
NAME = "synthetic_flex"
CENSUS_FILE = "sglang/srt/layers/attention/torch_flex_backend.py"
ROOT = installed_sglang_root()


def kvh_with_synthetic(*args: str) -> subprocess.CompletedProcess:
    """`kvh` in a subprocess, with the synthetic backend's folder on KVH_BACKEND_PATHS."""
    environment = {**os.environ, BACKEND_PATHS_VARIABLE: str(FOLDER)}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_synthetic_backend_is_one_module_outside_the_tree_registry():
    assert [path.name for path in FOLDER.glob("*.py")] == ["synthetic_flex.py"]
    assert NAME not in BACKENDS
    found = collect(backend_modules([FOLDER]))
    assert list(found)[:-1] == list(BACKENDS) and list(found)[-1] == NAME  # order 1000: last
    assert found[NAME].census.files == (CENSUS_FILE,)


@pytest.mark.slow
def test_kvh_matrix_lists_it(tmp_path):
    result = kvh_with_synthetic("matrix", "--out", str(tmp_path / "matrix.json"))
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {NAME} "))
    assert "| cpu " in row and "| yes " in row and "checked against the release's source" in row
    assert f"- {NAME}: skip `no-cross-attention`" in result.stdout
    listed = json.loads((tmp_path / "matrix.json").read_text())["backends"]
    assert [b["backend"] for b in listed][-1] == NAME


@pytest.mark.slow
def test_kvh_run_runs_its_cells_and_they_pass_against_the_judge(tmp_path):
    result = kvh_with_synthetic("run", "--backend", NAME, "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("PASS: "))
    passed = int(verdict.split(" checks: ")[1].split(" passed")[0])
    assert passed > 0 and " 0 with findings" in verdict
    summary = (tmp_path / "summary.md").read_text()
    assert f"{NAME}:extend" in summary and f"{NAME}:decode" in summary


@pytest.mark.slow
@pytest.mark.sglang
@pytest.mark.skipif(ROOT is None, reason=SGLANG_INSTALL_HINT)
def test_the_census_compares_its_call_sites_with_the_installed_release():
    model = backend_models(collect(backend_modules([FOLDER])))[NAME]
    release = census(ROOT)
    assert files_present(model, release) == (CENSUS_FILE,)
    assert [call.function for call in release.calls[CENSUS_FILE]] == [
        "TorchFlexAttnBackend.forward_extend",
        "TorchFlexAttnBackend.forward_decode",
    ]
    assert compare(release, model, "current") == []

    result = kvh_with_synthetic("sut", "check", "sglang")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"{NAME}: model matches" in lines
    # The file is claimed (by torch_flex too, since 0.5.23 has a backend module for it): no
    # unclaimed-file line names it, and the check exits 0.
    assert not any(
        line.startswith("write calls in files no backend") and Path(CENSUS_FILE).name in line
        for line in lines
    )
