"""Judges forked from a warm process, for a campaign that judges hundreds of copies of one release.

A cold `kvh run --sut sglang@DIR` spends ~14 of its 15 s before its first check (measured on
0.5.23, 4 pools x 2 backends, this 2-core machine): importing torch twice (the run and its
worker), the release's third-party imports and torch._dynamo, and the call-site census of the
release's backend files. Each copy of a campaign differs from the release in one or two files.

So this process imports, once, every module that a cold in-process run of the unmodified release
imports, except the release's own `sglang` package and the harness's stand-ins (learnt by running
one: `python -m harness.cli.learn_imports`), with the release folder first on sys.path and its
stand-ins installed first, as the loader does; and it reads the census of the release's files
once. Each judge is then a fork of it that runs `kvh run --in-process`: the child loads its copy's
`sglang` (the child is as disposable as a worker) and writes the same records a cold run does.

Nothing here is trusted on faith: `Judges.control` judges an unmodified copy warm, and the
campaign uses warm judges only when that control's plan matches the cold run's row for row.
`cold=True` execs a cold `kvh run` in each child instead.
"""

from __future__ import annotations

import gc
import importlib
import importlib.abc
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from harness.exit_codes import interrupted_exit_code

# One torch thread a judge: a campaign runs `jobs` judges side by side (a worker does the same).
JUDGE_THREADS = 1
# A judge runs in-process: its per-scenario limit (SIGALRM) cannot end a hang inside C code, so
# a judge still running after this long (one takes 5-60 s on 0.5.23) is killed, a judge with no
# verdict.
JUDGE_LIMIT_S = 900
# ... and its memory: a mutant of the CP padding's arithmetic made a rank allocate past 13 GB for
# a 16-token scenario (this machine has 23). Over this many bytes of data a judge's allocation,
# and its worker's and ranks' (they inherit it), fails in the frame that asked, as an error the
# run judges. A warm judge starts with under 2 GiB of data (measured: 1.4-1.8 GiB), and an
# unmodified release's scenarios add little (a profile's largest pool is 5 MiB).
JUDGE_DATA_BYTES = 6 << 30
# Runs kvh in-process and writes warm_modules (harness/cli/learn_imports.py).
LEARNING_SCRIPT = "harness.cli.learn_imports"


class _NoSglang(importlib.abc.MetaPathFinder):
    """Refuses `sglang` while warming: a third-party module that imports it is left cold."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "sglang" or name.startswith("sglang."):
            raise ImportError(f"{name} is the release's own: not imported while warming")
        return None


def warm_modules(loaded: dict, release: Path) -> list[tuple[str, str]]:
    """The modules of `loaded` (sys.modules, in import order) a judge of `release` can import
    before forking, with the real path of each one's file: not `sglang`, not a stand-in, and
    with a file of their own."""
    package = str((release / "sglang").resolve())
    kept = []
    for name, module in loaded.items():
        origin = getattr(module, "__file__", None)
        if name == "sglang" or name.startswith("sglang.") or origin is None:
            continue
        if getattr(module, "__kvwrite_standin__", False) or name in ("__main__", "__mp_main__"):
            continue
        real = str(Path(origin).resolve())
        if real.startswith(package):
            continue
        kept.append((name, real))
    return kept


def learn_modules(spec: str, argv: list[str], release: Path, out: Path) -> list[tuple[str, str]]:
    """Run `kvh ARGV` in-process in a child and return its warm_modules."""
    listing = out / "warm-modules.json"
    command = [sys.executable, "-m", LEARNING_SCRIPT, str(listing), str(release)]
    done = subprocess.run([*command, *argv], capture_output=True, text=True)
    if not listing.is_file():
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(
            f"learning what a judge of {spec} imports failed (rc {done.returncode}): {tail}"
        )
    return [tuple(pair) for pair in json.loads(listing.read_text())]


@dataclass
class Judges:
    """Start `kvh` runs as children of this process (warm: forked; cold: forked, then exec'd)
    and wait for them. Start them from one thread only: a fork copies no other thread."""

    release: Path
    # kvh's own entry point (harness.cli.main), which a warm judge calls with its arguments.
    entry: Optional[Callable[[list[str]], int]] = None
    cold: bool = False
    warmed: int = 0  # modules imported before forking
    not_warmed: list[str] = field(default_factory=list)  # those that would not import so
    running: dict[int, tuple[str, float]] = field(default_factory=dict)  # pid -> log, deadline
    overdue: set[int] = field(default_factory=set)  # killed past JUDGE_LIMIT_S

    def warm(self, modules: list[tuple[str, str]]) -> None:
        """Import `modules` here the way the loader would see them, and read the census. A module
        this process already holds from another file than the learnt run's (this environment's
        transformers where the release folder brings its own) is a RuntimeError: a judge would
        run with it."""
        # First, as the loader's first import: Triton's @jit reads TRITON_INTERPRET when it
        # decorates, and a language function decorated compiled here (triton.language's cdiv)
        # cannot be called from a release kernel a judge then decorates interpreted.
        import pools.builtin.engines.triton_mode  # noqa: F401
        from harness.sut.load import sglang_standins
        from harness.sut.probe.census import census

        blocker, folder = _NoSglang(), str(self.release)
        sys.meta_path.insert(0, blocker)
        sys.path.insert(0, folder)
        try:
            sglang_standins.install()
            for name, origin in modules:
                held = getattr(sys.modules.get(name), "__file__", None)
                if held is not None and str(Path(held).resolve()) != origin:
                    raise RuntimeError(f"this process holds {name} from {held}, not {origin}")
                try:
                    importlib.import_module(name)
                    self.warmed += 1
                except Exception:  # noqa: BLE001 - left for the child to import (or not) itself
                    self.not_warmed.append(name)
        finally:
            sys.meta_path.remove(blocker)
            sys.path.remove(folder)
        census(self.release)  # each child re-reads only the files its copy changed
        # What is warm now lives as long as this process: out of the collector's sight, a child's
        # collections do not copy the pages it shares with this process.
        gc.freeze()

    def start(
        self,
        argv: Union[list[str], Callable[[], Optional[list[str]]]],
        log: Path,
        cold: Optional[bool] = None,
    ) -> int:
        """A child running `kvh ARGV` (with --in-process when warm), its output in `log`. ARGV
        may be a function the child calls first (the campaign's rename of its copy, so renames
        run side by side as judges do); when it returns None the child ends with 0, unjudged.
        `cold`: this child cold or warm (default: as the set is)."""
        cold = self.cold if cold is None else cold
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            rc = 3
            try:
                descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(descriptor, 1)
                os.dup2(descriptor, 2)
                os.environ["OMP_NUM_THREADS"] = str(JUDGE_THREADS)
                _, hard = resource.getrlimit(resource.RLIMIT_DATA)
                unlimited = hard == resource.RLIM_INFINITY
                data = JUDGE_DATA_BYTES if unlimited else min(JUDGE_DATA_BYTES, hard)
                resource.setrlimit(resource.RLIMIT_DATA, (data, hard))
                # A copy's folders link to the release's: no bytecode of an edit may land there.
                os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
                sys.dont_write_bytecode = True
                argv = argv() if callable(argv) else argv
                if argv is None:
                    rc = 0
                elif cold:
                    os.execv(sys.executable, [sys.executable, "-m", "harness", *argv])
                else:
                    import torch

                    torch.set_num_threads(JUDGE_THREADS)
                    rc = self.entry([argv[0], "--in-process", *argv[1:]])
            except KeyboardInterrupt as interrupt:  # a signal stopped it: so its exit code says
                rc = interrupted_exit_code(interrupt)
            except BaseException:  # noqa: BLE001 - the parent reads the log; rc 3 is no verdict
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(rc)
        self.running[pid] = (str(log), time.monotonic() + JUDGE_LIMIT_S)
        return pid

    def stop_all(self) -> None:
        """End every child still running (SIGTERM: a `kvh run` stops as on a CI timeout)."""
        for pid in list(self.running):
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):  # it ended on its own
                pass
            self.running.pop(pid, None)

    def wait_any(self) -> tuple[int, int, str]:
        """(pid, exit code, log text) of the next child of this set to end."""
        return self.wait(-1)

    def wait(self, pid: int) -> tuple[int, int, str]:
        """(pid, exit code, log text) of child `pid` (-1: any of this set), once it ends; one
        past its deadline is killed first."""
        while True:
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended in self.running:
                return self._ended(ended, status)
            now = time.monotonic()
            for child, (_, deadline) in self.running.items():
                if now > deadline and child not in self.overdue:
                    self.overdue.add(child)
                    os.kill(child, signal.SIGKILL)
            time.sleep(0.05)

    def _ended(self, pid: int, status: int) -> tuple[int, int, str]:
        log = Path(self.running.pop(pid)[0])
        output = log.read_text(errors="replace") if log.is_file() else ""
        if pid in self.overdue:
            output += f"\nkvh: the judge ran past {JUDGE_LIMIT_S} s and was killed"
        return pid, os.waitstatus_to_exitcode(status), output


def run_once(judges: Judges, argv: list[str], log: Path) -> tuple[int, str, float]:
    """Start one judge and wait for it: (exit code, output, seconds)."""
    start = time.monotonic()
    _, rc, output = judges.wait(judges.start(argv, log))
    return rc, output, time.monotonic() - start
