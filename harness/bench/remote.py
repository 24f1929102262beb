"""The parent's side of a release bench: a cell timed in its SUT's worker (harness/bench/served.py)
and judged here against the baseline, as a cell timed in this process is."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Optional

import torch

from harness.bench.timers import Budget
from harness.compare.snapshot import Execution
from harness.sut.worker.client import IsolatedSut, WorkerFailure
from harness.sut.worker.protocol import decode_execution, missing_names
from scenarios.model import Scenario


class RemoteError(Exception):
    """What the SUT raised in its worker, or how the worker failed: the cell's error, as said."""


class RemoteTimedWrite:
    """One cell's write, built and timed in `worker`; the same surface as TimedWrite."""

    def __init__(
        self,
        worker: IsolatedSut,
        label: str,
        scenario: Scenario,
        candidate: dict,
        timeout_s: float,
    ):
        self.worker, self.label, self.timeout_s = worker, label, timeout_s
        self.device = candidate["device"]
        request = {
            "op": "bench_open",
            "label": label,
            "candidate": candidate,
            "threads": torch.get_num_threads(),
        }
        answer = self._ask(request, scenario, start=True)
        if answer["error"]:
            raise RemoteError(answer["error"])
        self.timed_code = answer["timed_code"]

    def _ask(self, request: dict, scenario: Optional[Scenario] = None, start: bool = False) -> dict:
        try:
            return self.worker.ask(request, self.timeout_s, scenario, start)
        except WorkerFailure as failure:
            raise RemoteError(str(failure)) from None
        except BaseException:  # the bench's own time limit, Ctrl-C: stopped between question
            self.worker.stop()  # and answer, whose answer must never be read as the next one's
            raise

    def turn(
        self, cache: str, phase: str, samples: list[int], budget: Budget, per_turn: int
    ) -> None:
        answer = self._ask(
            {
                "op": "bench_turn",
                "label": self.label,
                "device": self.device,
                "cache": cache,
                "phase": phase,
                "budget": dataclasses.asdict(budget),
                "per_turn": per_turn,
            }
        )
        samples.extend(answer["ns"])
        if answer["error"]:
            raise RemoteError(answer["error"])

    def snapshot(self, known: Optional[Execution] = None) -> Execution:
        """The buffers after the last timed write; only those whose digest differs from `known`
        (the baseline) travel as bytes."""
        message = self._ask({"op": "bench_snapshot", "label": self.label})["execution"]
        execution = decode_execution(message, known)
        missing = missing_names(message, execution)
        if missing:
            message = self._ask({"op": "bytes", "bytes": missing})["execution"]
            execution = decode_execution(message, known)
        return execution


def close_remote(worker: IsolatedSut, timeout_s: float) -> None:
    """Free a family's pools in `worker`; a worker that has stopped holds none."""
    if worker.process is not None:
        with contextlib.suppress(WorkerFailure):  # it stopped on the way: nothing is held
            worker.ask({"op": "bench_close"}, timeout_s)
