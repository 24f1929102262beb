"""The parent side of a SUT worker: start, ask, and survive a worker that crashes, hangs or
prints garbage. Each such failure becomes an Execution error (so a finding, with the worker's
stderr attached); the worker is restarted on the next request and the run goes on."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from harness.compare.snapshot import Execution
from harness.sut.load.load_errors import SutLoadError
from harness.sut.worker.protocol import VERSION, decode_execution, missing_names
from scenarios.model import Scenario
from scenarios.serialize import to_dict

REPO = Path(__file__).resolve().parents[3]
WORKER_THREADS = "1"


class WorkerFailure(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(f"worker {kind}: {detail}")
        self.kind = kind


class IsolatedSut:
    """One SUT in its own process. `python` and `prefix` choose its environment.

    Use it as a context manager (`with IsolatedSut(...) as sut:`), which stops the worker on the
    way out, an exception included; `stop()` does the same for a worker that outlives a block.
    """

    def __init__(
        self,
        spec: str,
        prefix: Optional[str] = None,
        python: str = sys.executable,
        start_timeout_s: float = 120.0,
        grace_s: float = 30.0,
    ):
        self.spec, self.prefix, self.python = spec, prefix, python
        # The worker enforces the per-scenario limit itself; grace_s covers what it cannot
        # (a hang inside C code, a stuck interpreter) before the parent kills it.
        self.start_timeout_s, self.grace_s = start_timeout_s, grace_s
        self.process: Optional[subprocess.Popen] = None
        self.stderr_file = None
        self.era: Optional[str] = None
        self.version = ""
        self.described: dict = {}  # the worker's hello: its LoadedSut.to_dict()
        self.restarts = 0

    def __enter__(self) -> IsolatedSut:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _start(self) -> None:
        self.stderr_file = tempfile.TemporaryFile()
        command = [self.python, "-m", "harness.run.worker", "--sut", self.spec]
        if self.prefix:
            command += ["--prefix", self.prefix]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            # One request at a time: the worker's torch threads would only spin against the
            # parent's between requests (measured on 2 cores: 1.7-5.2 examples/s with torch's
            # default threads, 15.9 with one).
            "OMP_NUM_THREADS": WORKER_THREADS,
        }
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            cwd=REPO,
            env=env,
            text=True,
        )
        self.described = self._ask({"op": "hello"}, self.start_timeout_s)["sut"]
        self.era, self.version = self.described["era"], self.described.get("version", "")

    def _stderr_tail(self, limit: int = 2000) -> str:
        if self.stderr_file is None:
            return ""
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")[-limit:].strip()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                stream.close()
        self.process = None

    def _ask(self, request: dict, timeout_s: float) -> dict:
        assert self.process is not None
        try:
            self.process.stdin.write(json.dumps({"v": VERSION, **request}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # the read below reports the crash with its stderr
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        try:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                raise self._fail("hung", f"no answer within {timeout_s:g} s")
            line = self.process.stdout.readline()
        finally:
            selector.close()
        if not line:
            self.process.wait()
            raise self._fail("crashed", f"exit code {self.process.returncode}")
        try:
            response = json.loads(line)
            assert isinstance(response, dict) and response.get("v") == VERSION
        except (json.JSONDecodeError, AssertionError):
            raise self._fail("garbage", f"unreadable answer {line[:200]!r}") from None
        if not response.get("ok"):
            chain = response.get("chain")
            detail = str(response.get("error")) + (f"\nimport chain:\n{chain}" if chain else "")
            raise self._fail("refused", detail)
        return response

    def _fail(self, kind: str, detail: str) -> WorkerFailure:
        tail = self._stderr_tail()
        self.stop()
        return WorkerFailure(kind, detail + (f"; stderr: {tail}" if tail else ""))

    def hello(self) -> tuple[str, str]:
        if self.process is None:
            self._start()
        return self.era, self.version

    def hello_or_error(self) -> tuple[str, str]:
        """hello(), with a worker that cannot start reported as a SutLoadError (a usage error)."""
        try:
            return self.hello()
        except WorkerFailure as failure:
            raise SutLoadError(
                f"SUT worker for {self.prefix or self.spec} did not start: {failure}"
            ) from None

    def execute(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        device: str,
        known: Optional[Execution],
        timeout_s: float = 60.0,
        era: Optional[str] = None,
    ) -> Execution:
        """Run in the worker; only buffers whose digest differs from `known` travel as bytes."""
        try:
            if self.process is None:
                self.restarts += self.era is not None
                self._start()
            request = {
                "op": "execute",
                "scenario": to_dict(scenario),
                "timeout_s": timeout_s,
                "candidate": {"backend": backend, "mode": mode, "device": device, "era": era},
            }
            message = self._ask({**request, "bytes": None}, timeout_s + self.grace_s)["execution"]
            execution = decode_execution(message, known)
            missing = missing_names(message, execution)
            if missing:
                # The bytes of the same run, never of a second one
                # (harness/run/worker.py).
                message = self._ask({"op": "bytes", "bytes": missing}, self.grace_s)["execution"]
                execution = decode_execution(message, known)
            return execution
        except WorkerFailure as failure:
            return Execution(error=str(failure), error_at=f"SUT worker ({failure.kind})")
