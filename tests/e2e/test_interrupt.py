"""`kvh run` stopped by SIGINT (Ctrl-C) or SIGTERM (a CI timeout), end to end in a subprocess:
what finished before the signal is written (the check rows, the coverage, summary.md with an
INTERRUPTED verdict, JUnit), nothing is half-written, SUT workers are stopped, and the exit code
is 130 or 143.

Each test waits for a progress line on stderr (a group or a cell finished) before it signals,
never a fixed time. Measured on 2 shared cores: the exploring run below takes about 5 minutes
whole and the deterministic one about 10 s, so either is mid-way when its signal arrives."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED
from harness.sut.load.environments import missing_shared_modules, not_ready_reason
from reports.summary import CHECK_OUTCOMES
from tests.conftest import REPO

SIGNALS = [(signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED)]


def counted(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows the verdict counts as checks: not the era table's, not those counted apart."""
    by_design = (rows["outcome"] == "skipped") & rows["skip_kind"].isin(
        ("by_design", "not_offered")
    )
    return rows[(rows["sut"] != "model") & ~by_design]


class Kvh:
    """`kvh run ...` in a subprocess whose stderr is read line by line as it comes."""

    def __init__(self, *args: str, env: dict | None = None):
        self.out = Path(args[args.index("--out") + 1])
        self.stdout_path = self.out.parent / "stdout.txt"
        self.lines: list[str] = []
        self.changed = threading.Condition()
        with self.stdout_path.open("w") as stdout:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness", "run", *args],
                cwd=REPO,
                stdout=stdout,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                # Ctrl-C's own disposition, even under a shell that started this test with
                # SIGINT ignored (a background job): Python then installs its KeyboardInterrupt.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.lines.append(None)  # the end of stderr
            self.changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 300) -> re.Match:
        """The first stderr line matching `pattern`, once it is printed."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self.changed:
            while True:
                for line in self.lines[seen:]:
                    assert line is not None, f"kvh ended before {pattern!r}:\n{self.stderr}"
                    match = re.search(pattern, line)
                    if match:
                        return match
                seen = len(self.lines)
                left = deadline - time.monotonic()
                assert left > 0, f"no {pattern!r} within {timeout} s:\n{self.stderr}"
                self.changed.wait(left)

    def stop(self, signum: int, timeout: float = 120) -> int:
        self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.reader.join(10)
            said = f"kvh still ran {timeout} s after {signal.Signals(signum).name}; its stderr:\n"
            pytest.fail(said + self.stderr[-4000:])
        self.reader.join(10)
        return code

    @property
    def stderr(self) -> str:
        return "".join(line for line in self.lines if line is not None)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()


def kept(kvh: Kvh, code: int, expected: int, signame: str) -> pd.DataFrame:
    """What every interrupted run keeps; the check rows it wrote."""
    context = f"\nstdout:\n{kvh.stdout[-3000:]}\nstderr:\n{kvh.stderr[-3000:]}"
    assert code == expected, context
    out = kvh.out
    # Nothing half-written: every write is atomic, and no temp file is left behind.
    leftovers = [name for _, _, names in os.walk(out) for name in names if name.endswith(".tmp")]
    assert not leftovers, leftovers
    (results,) = out.glob("check-*.parquet")
    assert len(list(out.glob("coverage-*.parquet"))) == 1
    rows = pd.read_parquet(results)
    assert len(rows) > 0, context
    assert set(rows["outcome"]) <= {str(outcome) for outcome in CHECK_OUTCOMES}
    summary = (out / "summary.md").read_text()
    head = summary.splitlines()[2]
    assert head.startswith(f"**INTERRUPTED ({signame}) after "), head
    assert "## Not finished (interrupted)" in summary
    printed = [line for line in kvh.stdout.splitlines() if line.startswith("INTERRUPTED")]
    assert printed == [head.strip("*")], context
    assert "Traceback" not in kvh.stderr, context
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("signum, expected", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_exploring_run_keeps_its_finished_cells(tmp_path, signum, expected):
    out = tmp_path / "out"
    kvh = Kvh("--profile", "ci", "--pool", "mha,swa_mha", "--dtype", "bf16", "--out", str(out))
    first = kvh.wait_for(r"^kvh: \[1\] (\S+): ")[1]  # one cell explored, while Hypothesis runs
    rows = kept(kvh, kvh.stop(signum), expected, signum.name)
    pool, dtype, backend_mode = first.split("/")
    backend, mode = backend_mode.split(":")
    assert (
        (rows["pool"] == pool)
        & (rows["dtype"] == dtype)
        & (rows["backend"] == backend)
        & (rows["mode"] == mode)
    ).any()
    verdict = (out / "summary.md").read_text().splitlines()[2]
    # 44 cells (mha and swa_mha through every backend and mode): most never ran.
    done, total = map(int, re.search(r"after (\d+) of (\d+) cells", verdict).groups())
    assert 1 <= done < total and "; not finished: " in verdict and first not in verdict


@pytest.mark.slow
def test_a_terminated_deterministic_run_keeps_its_finished_groups_and_junit(tmp_path):
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    pools, dtypes = "mha,swa_mha,mla", "bf16,fp8_e4m3"
    kvh = Kvh("--pool", pools, "--dtype", dtypes, "--junit", str(junit), "--out", str(out))
    done_first = int(kvh.wait_for(r"^kvh: \[1/6\] mha bf16 done: (\d+) checks")[1])
    rows = kept(kvh, kvh.stop(signal.SIGTERM), EXIT_TERMINATED, "SIGTERM")
    checks = counted(rows)
    first = checks[(checks["pool"] == "mha") & (checks["dtype"] == "bf16")]
    assert len(first) == done_first  # the whole first group
    verdict = (out / "summary.md").read_text().splitlines()[2]
    match = re.search(r"after (\d+) of 6 groups \((\d+) checks planned\): (\d+) checks", verdict)
    assert match, verdict
    done, planned, written = map(int, match.groups())
    assert 1 <= done < 6 and written == len(checks) < planned
    assert "mla fp8_e4m3" in verdict.split("; not finished: ")[1]
    assert junit.is_file() and "<testsuite" in junit.read_text()
    assert "kvh: terminated (SIGTERM) after" in kvh.stderr


SLOW_WHEN_TOLD = """
import os
import time

from pools.builtin.sut import builtin_module

_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool = _base.MLATokenToKVPool
with open(os.environ["KVH_TEST_PIDS"], "a") as pids:
    pids.write(f"{os.getpid()}\\n")


class MHATokenToKVPool(_base.MHATokenToKVPool):
    # Half a second a write once the test says so: the run then waits on this worker.
    def set_kv_buffer(self, *args, **kwargs):
        if os.path.exists(os.environ["KVH_TEST_SLOW"]):
            time.sleep(0.5)
        return super().set_kv_buffer(*args, **kwargs)
"""

SWA_POOL = """
from pools.builtin.sut import builtin_module
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool

SWAKVPool = type("SWAKVPool", (builtin_module("current", "torch").SWAKVPool,),
                 {"default_sub_pool_class": MHATokenToKVPool})
"""


# A SIGTERM handled while a garbage-collector callback runs (Hypothesis keeps one): CPython
# discards the handler's exception there ("Exception ignored in ..."), and the run went on.
SIGNAL_INSIDE_GC = """
import gc
import os
import signal
from pathlib import Path

from pools.builtin.sut import builtin_module

_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool, SWAKVPool = _base.MLATokenToKVPool, _base.SWAKVPool
_writes = []


def _signal_inside(phase, info):
    marker = Path(os.environ["KVH_TEST_SIGNALLED"])
    if phase == "start" and len(_writes) >= 200 and not marker.exists():
        marker.touch()
        signal.raise_signal(signal.SIGTERM)  # the handler runs here, inside the callback


gc.callbacks.append(_signal_inside)


class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, *args, **kwargs):
        _writes.append(None)
        if len(_writes) == 200:
            gc.collect()
        return super().set_kv_buffer(*args, **kwargs)
"""


@pytest.mark.slow
def test_a_sigterm_whose_raise_python_lost_in_a_gc_callback_still_stops_the_run(tmp_path):
    sut, signalled = tmp_path / "signal_inside_gc.py", tmp_path / "signalled"
    sut.write_text(textwrap.dedent(SIGNAL_INSIDE_GC))
    env = {**os.environ, "KVH_TEST_SIGNALLED": str(signalled)}
    out = tmp_path / "out"
    # In kvh's own process, so that the SUT's signal reaches the run (a worker would take it).
    kvh = Kvh(
        "--in-process", "--sut", str(sut), "--pool", "mha,mla", "--dtype", "bf16",
        "--out", str(out), env=env,
    )  # fmt: skip
    code = kvh.process.wait(300)  # the SUT signals the run itself
    kvh.reader.join(10)
    assert signalled.exists()
    rows = kept(kvh, code, EXIT_TERMINATED, "SIGTERM")
    assert "Exception ignored" not in kvh.stderr  # raised again, so not printed
    assert (rows["outcome"] != "finding").all()
    verdict = (out / "summary.md").read_text().splitlines()[2]
    assert "of 2 groups" in verdict and "mla bf16" in verdict.split("; not finished: ")[1]


@pytest.mark.slow
def test_sigterm_while_waiting_on_a_sut_worker_stops_the_worker(tmp_path):
    release = tmp_path / "release"
    package = release / "sglang" / "srt" / "mem_cache"
    package.mkdir(parents=True)
    (release / "sglang" / "__init__.py").write_text('__version__ = "0.0.0+fake"\n')
    (release / "sglang" / "srt" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "memory_pool.py").write_text(textwrap.dedent(SLOW_WHEN_TOLD))
    (package / "swa_memory_pool.py").write_text(textwrap.dedent(SWA_POOL))
    spec = f"sglang@{release}"
    if missing_shared_modules():
        pytest.skip(not_ready_reason(spec))
    pids, slow = tmp_path / "pids.txt", tmp_path / "slow"
    env = {**os.environ, "KVH_TEST_PIDS": str(pids), "KVH_TEST_SLOW": str(slow)}
    out = tmp_path / "out"
    kvh = Kvh("--sut", spec, "--pool", "mha,swa_mha", "--dtype", "bf16", "--out", str(out), env=env)
    kvh.wait_for(r"^kvh: \[1/2\] mha bf16 done")
    slow.touch()
    time.sleep(1.5)  # a few writes of half a second each: the signal comes during one
    rows = kept(kvh, kvh.stop(signal.SIGTERM), EXIT_TERMINATED, "SIGTERM")
    assert (rows["outcome"] != "finding").all()  # a worker call cut short is no finding
    workers = [int(pid) for pid in pids.read_text().split()]
    assert workers
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow
def test_a_terminated_run_with_jobs_keeps_every_jobs_finished_rows(tmp_path):
    out = tmp_path / "out"
    kvh = Kvh(
        "--jobs", "2", "--pool", "mha,swa_mha,mla", "--dtype", "bf16,fp8_e4m3", "--out", str(out)
    )
    # Each job finished a group (on a loaded machine one job may start later than the other).
    kvh.wait_for(r"^\[job 1/2\] kvh: \[1/\d\] ")
    kvh.wait_for(r"^\[job 2/2\] kvh: \[1/\d\] ")
    code = kvh.stop(signal.SIGTERM)
    assert code == EXIT_TERMINATED, kvh.stdout[-3000:] + kvh.stderr[-3000:]
    leftovers = [name for _, _, names in os.walk(out) for name in names if name.endswith(".tmp")]
    assert not leftovers, leftovers
    written = 0
    for job in (1, 2):
        folder = out / "jobs" / f"job-{job}"
        (results,) = folder.glob("check-*.parquet")
        rows = pd.read_parquet(results)
        written += len(counted(rows))
        # A job whose cells were all done when the signal came writes its whole results: a
        # summary either way (HeldSignals), never only some of its files.
        said = (folder / "summary.md").read_text().splitlines()[2]
        assert said.startswith(("**INTERRUPTED", "**PASS")), said
    head = (out / "summary.md").read_text().splitlines()[2]
    # The parent passed the signal on once; each job wrote what it finished, and the merged
    # verdict counts exactly those rows.
    assert re.match(rf"\*\*INTERRUPTED \(SIGTERM\) after [01] of 2 jobs: {written} checks", head)
    assert "not finished: job " in head
