"""One timed write: the pool, the call site's requests, and the restore step between iterations.

SGLang's MHA write divides the caller's k/v in place when their dtype differs from the pool's,
so iterations would not do identical work on reused inputs. Every iteration therefore starts
by copying pristine inputs back into the caller's tensors, outside the measured region; the
timed region holds only the backend call sites, one per layer. Because every iteration writes
the same bytes to the same slots, the buffers after the last iteration are exactly those of one
write, and that snapshot is what verification compares with the reference.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from backends.context import WriteRequest
from backends.registry import Backend, backend_named
from harness.bench.cuda_graph import graph_replay
from harness.bench.timers import Step
from harness.compare.snapshot import CALLER_TENSORS, Execution
from harness.run.execute import caller_bytes, write_request
from harness.run.pool_buffers import buffer_bytes, fill_canary
from harness.run.pool_factory import build_pool
from scenarios.materialize import ForwardStaging, scale_object
from scenarios.model import Scenario


def bench_requests(
    module: Any, backend: Backend, pool: Any, scenario: Scenario, device: str
) -> list[WriteRequest]:
    """One request per layer for the scenario's single
    forward, built as a checked run builds them."""
    locs = ForwardStaging(scenario, device, pool).begin(0)
    scales = (scale_object(scenario.k_scale, device), scale_object(scenario.v_scale, device))
    return [
        write_request(module, device, backend, pool, scenario, 0, layer_id, locs, scales)
        for layer_id in scenario.layers_of(scenario.forwards[0])
    ]


class TimedWrite:
    """A pool built and canary-filled once, and the write that each iteration repeats."""

    def __init__(
        self,
        module: Any,
        scenario: Scenario,
        device: str,
        backend: str,
        era: str,
        mode: str,
        cuda_graph: bool = False,
    ):
        self.scenario = scenario
        chosen = backend_named(backend)
        self.pool = build_pool(module, scenario, device)
        fill_canary(self.pool, scenario)
        self.requests = bench_requests(module, chosen, self.pool, scenario, device)
        # Made ready once per layer: the release's backend instance and metadata where the SUT
        # carries its class, so an iteration repeats only the forward's way to the write door.
        prepared = [chosen.prepared_write(request, era, mode) for request in self.requests]
        self.writes = [write for write, _ in prepared]
        self.timed_code = prepared[0][1] if prepared else "call-site model"
        self.pristine = [
            {
                name: getattr(request, name).clone()
                for name in CALLER_TENSORS
                if getattr(request, name) is not None
            }
            for request in self.requests
        ]
        if cuda_graph:
            # The layers' writes in one graph, replayed as one launch per iteration: what a
            # CUDA-graph decode step pays for them (GraphCaptureError where it cannot be held).
            layers = self.writes
            self.writes = [graph_replay(lambda: [write() for write in layers], device)]

    def restore(self) -> None:
        for request, pristine in zip(self.requests, self.pristine):
            for name, tensor in pristine.items():
                getattr(request, name).copy_(tensor)

    def run(self) -> None:
        for write in self.writes:
            write()

    def snapshot(self, known: Optional[Execution] = None) -> Execution:
        """The buffers and caller tensors after the last write, named as harness.run.execute names
        them (`known` is for a write timed elsewhere, which sends only what differs from it)."""
        result = Execution(buffers=buffer_bytes(self.pool, self.scenario))
        for request in self.requests:
            result.caller.update(caller_bytes(request, 0))
        return result


def copy_write(nbytes_moved: int, device: str) -> tuple[Step, Step]:
    """The roofline as (setup, work): a contiguous copy that
    reads and writes `nbytes_moved` bytes in total."""
    count = max(nbytes_moved // 2, 1)
    source = torch.full((count,), 0x3C, dtype=torch.uint8, device=device)
    destination = torch.empty_like(source)
    return (lambda: None), (lambda: destination.copy_(source))
