"""The parent side of a SUT worker: start, ask, and survive a worker that crashes, hangs or
prints garbage. Each such failure becomes an Execution error (so a finding, with the worker's
stderr attached); the worker is restarted on the next request and the run goes on."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional, Union

from harness.sut.load.load_errors import SutLoadError

if TYPE_CHECKING:
    from harness.compare.snapshot import Execution
    from harness.sut.worker.rank_forker import ForkedRank, RankForker
    from scenarios.model import Scenario

# The protocol's module imports torch: this one does not, so that a worker can be started
# before its parent's own imports (harness/cli/run.py) and both import torch at once.

REPO = Path(__file__).resolve().parents[3]
WORKER_THREADS = "1"
# How long a measuring worker (kvh run --coverage) may take to save its data once told to end.
COVERAGE_SAVE_S = 60.0
MIN_GRACE_S = 5.0
# Scenarios kept, as JSON here and parsed in the worker: a deterministic run sends each of a pool
# kind and dtype's scenarios (tens) to each of its cells in turn.
SERIALISED_KEPT = 256


def worker_environment(import_paths: tuple[str, ...] = ()) -> dict[str, str]:
    """A worker's environment: the repository first on its path, then `import_paths`."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(REPO), *import_paths, *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        # One request at a time: the worker's torch threads would only spin against the
        # parent's between requests (measured on 2 cores: 1.7-5.2 examples/s with torch's
        # default threads, 15.9 with one).
        "OMP_NUM_THREADS": WORKER_THREADS,
    }


class Kept(NamedTuple):
    scenario: Scenario  # held, so that no other object can take its id
    key: int  # the worker's name for it, once it holds it
    text: str


class WorkerFailure(Exception):
    def __init__(self, kind: str, detail: str, load_error: str = ""):
        super().__init__(f"worker {kind}: {detail}")
        self.kind = kind
        self.load_error = load_error  # a refused load: the loader's own message


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
        import_paths: tuple[str, ...] = (),
        coverage: Optional[str] = None,
        kinds: Optional[list[str]] = None,
        cp: Optional[tuple[int, int, str]] = None,
        forker: Optional[RankForker] = None,
    ):
        self.spec, self.prefix, self.python = spec, prefix, python
        self.forker = forker  # a CP rank forked from its group's loaded forker, not started cold
        # (rank, world, address): a rank of a CP group (harness/sut/worker/cp_group.py), and why
        # the release's own CP code does not write there (its hello; None: it does).
        self.cp, self.cp_model_why = cp, None
        self.kinds = kinds  # the pool kinds the run plans (None: every kind)
        self.coverage = coverage  # a folder the worker measures the release's lines into
        self.import_paths = import_paths  # after the repository on the worker's PYTHONPATH
        # The worker enforces the per-scenario limit itself; grace_s covers what it cannot
        # (a hang inside C code, a stuck interpreter) before the parent kills it.
        self.start_timeout_s, self.grace_s = start_timeout_s, grace_s
        self.process: Optional[Union[subprocess.Popen, ForkedRank]] = None
        self.stderr_file = None
        self.era: Optional[str] = None
        self.version = ""
        self.described: dict = {}  # the worker's hello: its LoadedSut.to_dict()
        self.hello_sent = 0.0
        self.restarts = 0
        self.in_flight: Optional[Submitted] = None  # an execute request sent, not yet read
        # Scenarios as sent, newest last: a run sends each scenario to every cell of its pool
        # kind and dtype (321 scenarios in 787 requests of the default plan). The worker holds
        # the parsed scenario of every key in `_held` and drops those in `_forget` when told:
        # this side decides what it holds, so the two never disagree (a reply of
        # unknown_scenario, were they to, has the request sent again whole).
        self._serialised: OrderedDict[int, Kept] = OrderedDict()
        self._keys = itertools.count()
        self._held: set[int] = set()
        self._forget: list[int] = []
        self._last_sent: tuple[dict, Optional[Scenario]] = ({}, None)
        self._posted = 0.0

    def __enter__(self) -> IsolatedSut:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _start(self) -> None:
        self.spawn()
        self._await_hello()

    def spawn(self) -> None:
        """Start the worker and send it hello without waiting for the answer (`hello` reads it):
        the worker imports while this process goes on with its own work."""
        self.stderr_file = tempfile.TemporaryFile()
        if self.forker is not None:
            assert self.cp is not None, "only a CP rank is forked"
            self.process = self.forker.fork(self.cp, self.coverage, self.stderr_file)
        else:
            self._popen()
        self.described = {}
        self._held, self._forget = set(), []  # a new process holds no scenario
        self._send({"op": "hello"})
        self.hello_sent = time.monotonic()

    def _popen(self) -> None:
        command = [self.python, "-m", "harness.cli.worker", "--sut", self.spec]
        if self.prefix:
            command += ["--prefix", self.prefix]
        if self.coverage:
            command += ["--coverage", self.coverage]
        if self.kinds is not None:
            command += ["--pools", ",".join(self.kinds)]
        if self.cp is not None:
            command += ["--cp", ",".join(map(str, self.cp))]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            cwd=REPO,
            env=worker_environment(self.import_paths),
            text=True,
        )

    def _await_hello(self) -> None:
        limit = self.start_timeout_s
        hello = self._read(self.hello_sent + limit, limit)
        self.described, self.cp_model_why = hello["sut"], hello.get("cp_model_why")
        self.era, self.version = self.described["era"], self.described.get("version", "")

    def _stderr_tail(self, limit: int = 2000) -> str:
        if self.stderr_file is None:
            return ""
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")[-limit:].strip()

    def stop(self) -> None:
        if self.process is not None:
            if self.coverage and self.process.poll() is None:
                # Its input closed, the worker ends its loop and saves what it measured.
                with contextlib.suppress(BrokenPipeError, OSError):
                    self.process.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=COVERAGE_SAVE_S)
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                # A broken pipe holds a request it never read: nothing to deliver now.
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        self.process = None

    def post(self, request: dict, scenario: Optional[Scenario] = None) -> None:
        """Send a request without reading its answer (`answer` does): a CP group sends each
        rank its request before it waits for any, as their write waits for every rank."""
        if self.in_flight is not None:
            self.in_flight.abandon()
        self._send(request, scenario)
        self._posted = time.monotonic()

    def answer(self, timeout_s: float) -> dict:
        """The answer to the request `post` sent, within `timeout_s` of sending it."""
        return self._read(self._posted + timeout_s, timeout_s)

    def _ask(self, request: dict, timeout_s: float) -> dict:
        self._send(request)
        return self._read(time.monotonic() + timeout_s, timeout_s)

    def _send(self, request: dict, scenario: Optional[Scenario] = None) -> None:
        """Write one request. `scenario` goes by its key ("scenario_key"), with its JSON as the
        "scenario" field the first time this worker process is sent it: a scenario runs
        through many cells, and the worker parses it once while it is among the last
        SERIALISED_KEPT sent."""
        from harness.sut.worker.protocol import VERSION

        assert self.process is not None
        self._last_sent = (request, scenario)
        text = None
        if scenario is not None:
            kept = self._kept(scenario)
            request = {**request, "scenario_key": kept.key}
            if self._forget:
                request["forget"], self._forget = self._forget, []
            if kept.key not in self._held:
                self._held.add(kept.key)
                text = kept.text
        line = json.dumps({"v": VERSION, **request})
        if text is not None:
            line = f'{line[:-1]}, "scenario": {text}}}'
        with contextlib.suppress(BrokenPipeError):  # the read reports the crash with its stderr
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()

    def _kept(self, scenario: Scenario) -> Kept:
        # A scenario is a value (nothing changes one once it is built), so its text stays right.
        kept = self._serialised.get(id(scenario))
        if kept is not None:
            self._serialised.move_to_end(id(scenario))
            return kept
        from scenarios.serialize import to_dict

        kept = Kept(scenario, next(self._keys), json.dumps(to_dict(scenario)))
        self._serialised[id(scenario)] = kept
        if len(self._serialised) > SERIALISED_KEPT:
            _, dropped = self._serialised.popitem(last=False)
            if dropped.key in self._held:
                self._held.discard(dropped.key)
                self._forget.append(dropped.key)
        return kept

    def _read(self, deadline: float, timeout_s: float, resent: bool = False) -> dict:
        """The answer to the request sent last, by `deadline` (`timeout_s` after it was sent);
        `resent`: that request was sent again whole after the worker did not hold its
        scenario."""
        from harness.sut.worker.protocol import VERSION

        assert self.process is not None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
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
        request, scenario = self._last_sent
        if response.get("unknown_scenario") and scenario is not None and not resent:
            # The two sides' bookkeeping disagrees: the harness's own error, never the SUT's
            # finding. The worker drops what it holds and is sent the request whole.
            self._forget.extend(self._held)
            self._held.clear()
            self._send(request, scenario)
            return self._read(deadline, timeout_s, resent=True)
        if not response.get("ok"):
            chain = response.get("chain")
            detail = str(response.get("error")) + (f"\nimport chain:\n{chain}" if chain else "")
            load_error = str(response.get("load_error") or response.get("error"))
            raise self._fail("refused", detail, load_error)
        return response

    def _fail(self, kind: str, detail: str, load_error: str = "") -> WorkerFailure:
        tail = self._stderr_tail()
        self.stop()
        return WorkerFailure(kind, detail + (f"; stderr: {tail}" if tail else ""), load_error)

    def hello(self) -> tuple[str, str]:
        if self.process is None:
            self.spawn()
        if not self.described:
            self._await_hello()
        return self.era, self.version

    def hello_or_error(self) -> tuple[str, str]:
        """hello(), with a worker that cannot start reported as a SutLoadError (a usage error)."""
        try:
            return self.hello()
        except WorkerFailure as failure:
            if failure.kind == "refused" and self.prefix is None:
                # A user's module that did not load: its own message, as loading it here says.
                raise SutLoadError(failure.load_error) from None
            raise SutLoadError(
                f"SUT worker for {self.prefix or self.spec} did not start: {failure}"
            ) from None

    def ask(
        self,
        request: dict,
        timeout_s: float,
        scenario: Optional[Scenario] = None,
        start: bool = False,
    ) -> dict:
        """One request and its answer (a bench's). `start`: start the worker first where it is not
        running; otherwise a worker that failed earlier raises WorkerFailure("stopped"), since
        what the request refers to died with it."""
        if self.in_flight is not None:
            self.in_flight.abandon()
        if self.process is None:
            if not start:
                raise WorkerFailure("stopped", "it failed on an earlier request of this cell")
            self.restarts += self.era is not None
            self._start()
        self._send(request, scenario)
        return self._read(time.monotonic() + timeout_s, timeout_s)

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
        return self.submit(scenario, backend, mode, device, timeout_s, era).result(known)

    def trail(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        device: str,
        timeout_s: float = 60.0,
        era: Optional[str] = None,
    ) -> tuple[str, ...]:
        """The release functions the scenario's writes run in the worker (harness/run/
        release_trail.py): a run of its own, which leaves the last execution's bytes as they
        were."""
        from harness.sut.worker.protocol import trail_request

        request = trail_request(backend, mode, device, timeout_s, era)
        answer = self.ask(request, timeout_s + MIN_GRACE_S, scenario)
        return tuple(answer["release_trail"])

    def submit(
        self,
        scenario: Scenario,
        backend: str,
        mode: str,
        device: str,
        timeout_s: float = 60.0,
        era: Optional[str] = None,
    ) -> Submitted:
        """Send one execute request and return at once: the worker runs it while this process
        does other work (a cell's baselines), and `result` reads the answer. One request is in
        flight at a time; one left unread is abandoned (its worker stopped) by the next."""
        from harness.sut.worker.protocol import candidate

        if self.in_flight is not None:
            self.in_flight.abandon()
        failure = None
        try:
            if self.process is None:
                self.restarts += self.era is not None
                self._start()
            self._send(
                {
                    "op": "execute",
                    "timeout_s": timeout_s,
                    "candidate": candidate(backend, mode, device, era),
                    "bytes": None,
                },
                scenario,
            )
        except WorkerFailure as not_started:
            failure = not_started
        self.in_flight = Submitted(self, timeout_s, failure)
        return self.in_flight


class Submitted:
    """An execute request sent to a worker and not yet answered."""

    def __init__(
        self, worker: IsolatedSut, timeout_s: float, failure: Optional[WorkerFailure] = None
    ):
        self.worker, self.timeout_s = worker, timeout_s
        self.sent = time.monotonic()
        self.failure = failure  # the worker did not start

    def result(self, known: Optional[Execution]) -> Execution:
        """The execution; only buffers whose digest differs from `known` travel as bytes. A
        worker that crashed, hung or answered garbage is an Execution error (a finding)."""
        from harness.compare.snapshot import Execution
        from harness.sut.worker.protocol import decode_execution, missing_names

        worker = self.worker
        worker.in_flight = None
        limit = self.limit_at() - self.sent
        try:
            if self.failure is not None:
                raise self.failure
            message = worker._read(self.sent + limit, limit)["execution"]
            execution = decode_execution(message, known)
            missing = missing_names(message, execution)
            if missing:
                # The bytes of the same run, never of a second one (harness/cli/worker.py).
                message = worker._ask({"op": "bytes", "bytes": missing}, worker.grace_s)
                execution = decode_execution(message["execution"], known)
            return execution
        except WorkerFailure as failure:
            return Execution(error=str(failure), error_at=f"SUT worker ({failure.kind})")

    def limit_at(self) -> float:
        """When a hang the worker cannot stop (one that swallows its timeout) is killed: as long
        after the limit again as the limit, at least MIN_GRACE_S, at most the worker's grace_s."""
        grace = min(self.worker.grace_s, max(MIN_GRACE_S, self.timeout_s))
        return self.sent + self.timeout_s + grace

    def abandon(self) -> None:
        """Never read: stop the worker, so that its answer cannot be taken for the next one's."""
        self.worker.in_flight = None
        self.worker.stop()
