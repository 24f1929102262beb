"""The group's end of a rank forker (harness/cli/rank_zygote.py): one process that loaded the
release once, and forks each rank of a CP group on request.

A forked rank is not this process's child, so `ForkedRank` stands in for its Popen: its pipes are
made here and sent to the forker with the request, its exit code comes from the forker (which
waits for it), and a kill is this process's signal to its pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

from harness.sut.worker.client import REPO, WorkerFailure, worker_environment

MESSAGE_BYTES = 1 << 16
# How often a wait asks the forker whether a rank has ended.
POLL_S = 0.02


def _forks_ranks() -> bool:
    """Linux only: descriptors passed over a SOCK_SEQPACKET pair (whose close the forker reads
    as its end), and a fork of a process that imported torch (macOS's runtime survives none)."""
    try:
        socket.SOCK_SEQPACKET, socket.send_fds  # noqa: B018 - whether this Python has both
    except AttributeError:
        return False
    return sys.platform.startswith("linux")


FORKS_RANKS = _forks_ranks()


class RankForker:
    """The forker of one release (the folder holding its `sglang`), started at the first fork."""

    def __init__(self, prefix: str, kinds: Optional[list[str]], start_timeout_s: float = 120.0):
        self.prefix, self.kinds, self.start_timeout_s = prefix, kinds, start_timeout_s
        self.process: Optional[subprocess.Popen] = None
        self.control: Optional[socket.socket] = None
        self.stderr_file: Any = None
        self.cannot_fork = ""  # why the loaded forker would not fork (its threads): spawn cold

    def start(self) -> None:
        """Start the forker and wait until it has loaded the release (a WorkerFailure where it
        did not: "refused" with the loader's own message, as a cold worker's hello says it)."""
        if self.process is not None and self.process.poll() is None:
            return
        self.stop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.stderr_file = tempfile.TemporaryFile()
        command = [sys.executable, "-m", "harness.cli.rank_zygote", "--sut", "sglang"]
        command += ["--prefix", self.prefix, "--control", str(theirs.fileno())]
        if self.kinds is not None:
            command += ["--pools", ",".join(self.kinds)]
        with theirs:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=self.stderr_file,
                stderr=self.stderr_file, cwd=REPO, env=worker_environment(),
                pass_fds=(theirs.fileno(),),
            )  # fmt: skip
        self.control = ours
        said = self._answer(self.start_timeout_s, "loading the release")
        if not said.get("ok"):
            chain = said.get("chain")
            detail = str(said.get("error")) + (f"\nimport chain:\n{chain}" if chain else "")
            self.stop()
            raise WorkerFailure("refused", detail, str(said.get("load_error") or said.get("error")))
        self.cannot_fork = said.get("cannot_fork", "")

    def _answer(self, timeout_s: float, doing: str) -> dict:
        assert self.control is not None
        self.control.settimeout(timeout_s)
        try:
            data = self.control.recv(MESSAGE_BYTES)
        except socket.timeout:
            raise self._fail("hung", f"rank forker: no answer within {timeout_s:g} s {doing}")
        except OSError as error:
            raise self._fail("crashed", f"rank forker: {error} {doing}")
        if not data:
            raise self._fail("crashed", f"rank forker: ended {doing}")
        return json.loads(data)

    def _fail(self, kind: str, detail: str) -> WorkerFailure:
        tail = ""
        if self.stderr_file is not None:
            self.stderr_file.seek(0)
            tail = self.stderr_file.read().decode(errors="replace")[-2000:].strip()
        self.stop()
        return WorkerFailure(kind, detail + (f"; stderr: {tail}" if tail else ""))

    def fork(self, cp: tuple[int, int, str], coverage: Optional[str], stderr: Any) -> ForkedRank:
        """A rank of the group `cp` (rank, world, rendezvous), writing its stderr to `stderr`."""
        self.start()
        assert self.control is not None
        rank_stdin, our_stdin = os.pipe()
        our_stdout, rank_stdout = os.pipe()
        request = {"op": "fork", "cp": list(cp), "coverage": coverage}
        try:
            socket.send_fds(
                self.control, [json.dumps(request).encode()],
                [rank_stdin, rank_stdout, stderr.fileno()],
            )  # fmt: skip
        except OSError as error:
            for descriptor in (rank_stdin, our_stdin, our_stdout, rank_stdout):
                os.close(descriptor)
            raise self._fail("crashed", f"rank forker: {error} sending a fork")
        os.close(rank_stdin)
        os.close(rank_stdout)
        said = self._answer(self.start_timeout_s, "forking a rank")
        if "pid" not in said:
            os.close(our_stdin)
            os.close(our_stdout)
            raise WorkerFailure("refused", f"rank forker: {said.get('error')}")
        return ForkedRank(self, said["pid"], os.fdopen(our_stdin, "w"), os.fdopen(our_stdout))

    def returncode(self, pid: int) -> Optional[int]:
        """A rank's exit code once it has ended (None while it runs). Where the forker is gone,
        its ranks are init's children: one still running is None, one gone is -SIGKILL, as how
        it ended is unknown."""
        if self.control is not None:
            try:
                self.control.send(json.dumps({"op": "poll", "pid": pid}).encode())
                return self._answer(self.start_timeout_s, "polling a rank")["returncode"]
            except (OSError, WorkerFailure):
                pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return -signal.SIGKILL
        return None

    def stop(self) -> None:
        """End the forker (its ranks end when their group's process closes their input)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process = None


class ForkedRank:
    """A forked rank, as IsolatedSut uses a Popen (stdin, stdout, poll, wait, kill)."""

    def __init__(self, forker: RankForker, pid: int, stdin: Any, stdout: Any):
        self.forker, self.pid, self.stdin, self.stdout = forker, pid, stdin, stdout
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self.returncode = self.forker.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"rank {self.pid}", timeout)
            time.sleep(POLL_S)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
