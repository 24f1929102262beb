"""A user's pool file runs in a worker process, as a release does (issue 44): whatever its write
does (exit, crash, hang swallowing every exception, KeyboardInterrupt) is a finding that names
it, with a verdict and results written, never kvh's exit code; and SIGTERM still stops the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from harness.exit_codes import EXIT_FINDINGS, EXIT_TERMINATED
from tests.conftest import FIXTURES, REPO, scenario_file

WALLS = str(FIXTURES / "walls.py")


def _run(fault: str, folder, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", "run", "--sut", WALLS, "--pool", "mha", "--dtype",
         "bf16", "--backend", "plain", "--scenario", scenario_file(folder), "--out",
         str(folder / "out"), *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KVH_TEST_WALL": fault},
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, named",
    [
        ("exit0", "worker crashed: exit code 0"),
        ("exit1", "worker crashed: exit code 1"),
        ("segv", f"worker crashed: exit code {-signal.SIGSEGV}"),
        ("interrupt", "KeyboardInterrupt"),
        ("swallow", "worker hung: no answer within 6 s"),  # --timeout 1, then 5 s of grace
    ],
)
def test_a_pool_that_exits_crashes_hangs_or_interrupts_is_a_finding(fault, named, tmp_path):
    result = _run(fault, tmp_path, "--timeout", "1")
    assert result.returncode == EXIT_FINDINGS, result.stdout[-2000:] + result.stderr[-2000:]
    assert "FAIL: 1 checks: 0 passed, 1 with findings" in result.stdout
    (results,) = (tmp_path / "out").glob("check-*.parquet")
    rows = pd.read_parquet(results)
    found = rows[(rows["outcome"] == "finding") & (rows["sut"] != "model")]
    assert len(found) == 1 and named in found["detail"].iloc[0], found["detail"].tolist()
    assert (tmp_path / "out" / "summary.md").read_text().splitlines()[2].startswith("**FAIL")


@pytest.mark.slow
def test_sigterm_stops_a_run_whose_pool_swallows_every_exception(tmp_path):
    mark = tmp_path / "worker.pid"
    command = [
        sys.executable, "-m", "harness", "run", "--sut", WALLS, "--pool", "mha", "--dtype",
        "bf16", "--backend", "plain", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    env = {**os.environ, "KVH_TEST_WALL": "swallow", "KVH_TEST_MARK": str(mark)}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), "the pool's write never started"
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert process.wait(30) == EXIT_TERMINATED
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):  # the worker went with the run
        os.kill(int(mark.read_text()), 0)


def test_in_process_is_the_debugger_s_way_and_says_what_it_gives_up():
    import argparse

    from harness.cli.run import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    help_text = " ".join(parser.format_help().split())
    assert "--in-process" in help_text and "instead of being a finding" in help_text
