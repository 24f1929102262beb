"""Shared helpers for the harness's own tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.xdist_devices import pytest_configure  # noqa: F401  (pins xdist workers to devices)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def check_records(results_dir: Path):
    """The `check` rows a `kvh run` appended to the results store in `results_dir`."""
    from reports.store import load
    return load(results_dir).of("check")


def run_kvh(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the real `kvh` entry point in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def fixture_sut():
    return lambda name: str(FIXTURES / f"{name}.py")
