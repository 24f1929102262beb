"""The worker's side of a release bench: timed writes built and timed in the SUT's own process.

A release cannot share a process with another release (both are the `sglang` package), so
`kvh bench --sut sglang==X` times each one in its worker, where `kvh run` checks it. The parent
decides which write takes the next turn (harness/bench/interleave.py), so the writes of two
releases take turns as the era call sites of one SUT do; a turn here is the same code as a turn
in the parent (`one_turn`), timed by the same timer, and only its samples travel back.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.bench.interleave import one_turn
from harness.bench.measure import TimedWrite
from harness.bench.timers import Budget, timer_for
from harness.compare.snapshot import Execution
from harness.run.execute import describe_error
from scenarios.model import Scenario


class BenchService:
    """The timed writes a parent opened in this worker, by label, and their samples so far."""

    def __init__(self, module: Any):
        self.module = module
        self.writes: dict[str, TimedWrite] = {}
        self.samples: dict[tuple[str, str], list[int]] = {}  # (label, phase) -> ns
        self.timers: dict[str, Any] = {}

    def open(self, request: dict, scenario: Scenario) -> dict:
        """Build one cell's pool and requests for `scenario` (the request's, as the worker holds
        it); a SUT that raises is the cell's error, as data."""
        candidate = request["candidate"]
        torch.set_num_threads(int(request["threads"]))  # the parent's, so both time alike
        try:
            write = TimedWrite(
                self.module,
                scenario,
                candidate["device"],
                candidate["backend"],
                candidate["era"],
                candidate["mode"],
                bool(candidate.get("cuda_graph")),
            )
        except Exception as error:  # a SUT failure is data, never the worker's end
            return {"error": describe_error(error, source_line=True)}
        self.writes[request["label"]] = write
        return {"error": None, "timed_code": write.timed_code}

    def turn(self, request: dict) -> dict:
        """One turn of one write; the samples it took, or what the SUT raised."""
        device = request["device"]
        if device not in self.timers:
            self.timers[device] = timer_for(device)
        timer = self.timers[device]
        write = self.writes.get(request["label"])
        if write is None:  # this worker started after the cell was opened (the last one died)
            return {"error": f"no timed write {request['label']!r} in this worker", "ns": []}
        samples = self.samples.setdefault((request["label"], request["phase"]), [])
        before = len(samples)
        try:
            one_turn(
                timer,
                write.restore,
                write.run,
                request["cache"],
                samples,
                Budget(**request["budget"]),
                int(request["per_turn"]),
            )
        except Exception as error:
            return {"error": describe_error(error, source_line=True), "ns": []}
        return {"error": None, "ns": samples[before:]}

    def snapshot(self, label: str) -> Execution:
        if label not in self.writes:
            return Execution(error=f"no timed write {label!r} in this worker", error_at="timing")
        try:
            return self.writes[label].snapshot()
        except Exception as error:
            return Execution(error=describe_error(error, source_line=True), error_at="timing")

    def close(self) -> None:
        """Free the family's pools (a 32768-token cell holds hundreds of MB)."""
        self.writes.clear()
        self.samples.clear()
