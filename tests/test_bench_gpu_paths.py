"""The GPU timing paths, CUDA-graph replay and cold L2, driven on CPU through fakes of the torch
device API, and for real where there is a CUDA device (scripts/gpu_check.py runs this file)."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

import pytest
import torch

from harness.bench.cuda_graph import GraphCaptureError, graph_replay
from harness.bench.interleave import sample_interleaved
from harness.bench.timers import (
    GPU_ONLY_TIMING,
    Budget,
    EventTimer,
    flush_bytes,
    timing_unavailable_reason,
)
from harness.plan.devices import unavailable_reason

WORK_MS = 0.25  # what one write costs on the fake device's clock (exact in binary)
L2_BYTES = 40 << 20
CUDA_MISSING = unavailable_reason("cuda")  # the skip reason, "no CUDA device (...)"
SHORT = Budget(warmup=2, warmup_s=0.0, min_samples=5, max_samples=5, min_time_s=0.0)


class FakeDevice:
    """`torch.cuda` as EventTimer uses it: events read a clock that only work advances."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.now_ms = 0.0
        self.flush_sizes: list[int] = []

    def run(self, name: str, ms: float = WORK_MS) -> None:
        self.log.append(name)
        self.now_ms += ms

    def Event(self, enable_timing: bool = False) -> "FakeEvent":
        assert enable_timing
        return FakeEvent(self)

    def synchronize(self, device: str) -> None:
        self.log.append(f"device-sync {device}")

    def make_flush(self, nbytes: int, device: str) -> Callable[[], None]:
        self.flush_sizes.append(nbytes)
        return lambda: self.log.append("flush")

    def timer(self, device: str = "cuda:0") -> EventTimer:
        return EventTimer(device, backend=self, l2_bytes=L2_BYTES, make_flush=self.make_flush)


class FakeEvent:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.at_ms: Optional[float] = None

    def record(self) -> None:
        self.device.log.append("record")
        self.at_ms = self.device.now_ms

    def synchronize(self) -> None:
        self.device.log.append("event-sync")

    def elapsed_time(self, end: "FakeEvent") -> float:
        assert self.at_ms is not None and end.at_ms is not None
        return end.at_ms - self.at_ms


def _iterations(log: list[str]) -> list[list[str]]:
    """The log cut into iterations, each beginning at its untimed setup; device syncs dropped."""
    iterations: list[list[str]] = []
    for entry in log:
        if entry == "setup":
            iterations.append([])
        if not entry.startswith("device-sync"):
            iterations[-1].append(entry)
    return iterations


def test_cold_samples_flush_before_every_timed_iteration_and_warm_ones_never() -> None:
    device = FakeDevice()
    timer = device.timer()
    assert timer.caches == ("warm", "cold") and timer.name == "torch.cuda.Event"
    sampled = sample_interleaved(
        timer, {"w": (lambda: device.log.append("setup"), lambda: device.run("work"))}, SHORT
    )["w"]
    assert not isinstance(sampled, Exception)
    assert [s.cache for s in sampled] == ["warm", "cold"]
    assert all(s.timer == "torch.cuda.Event" and len(s.ns) == 5 for s in sampled)
    warm = ["setup", "record", "work", "record", "event-sync"]
    cold = ["setup", "flush", "record", "work", "record", "event-sync"]
    # Warm-up (2) then samples (5) per cache state; every timed iteration, warm-up included,
    # flushes first when cold and never when warm.
    assert _iterations(device.log) == [warm] * (2 + 5) + [cold] * (2 + 5)
    assert "device-sync cuda:0" in device.log  # the timer synchronises its own device


def test_samples_are_nanoseconds_from_elapsed_time_in_milliseconds() -> None:
    device = FakeDevice()
    sampled = sample_interleaved(
        device.timer(), {"w": (lambda: None, lambda: device.run("work"))}, SHORT
    )["w"]
    assert not isinstance(sampled, Exception)
    assert {ns for samples in sampled for ns in samples.ns} == {250_000}
    # The flush runs before the start event: its time is outside every sample.
    device = FakeDevice()
    timer = EventTimer(
        "cuda", backend=device, l2_bytes=L2_BYTES, make_flush=lambda n, d: lambda: device.run("f")
    )
    timer.prepare("cold")
    assert timer.time_one(lambda: device.run("work")) == 250_000


def test_the_flush_buffer_is_at_least_twice_the_l2() -> None:
    device = FakeDevice()
    device.timer()
    assert device.flush_sizes == [flush_bytes(L2_BYTES)]
    assert flush_bytes(L2_BYTES) >= 2 * L2_BYTES
    assert flush_bytes(1024) >= 2 * 1024 and flush_bytes(0) > 0  # never an empty flush


@pytest.mark.parametrize("device", ["npu:0", "xpu"])
def test_devices_other_than_cuda_never_flush_and_report_warm_only(device: str) -> None:
    fake = FakeDevice()
    timer = EventTimer(device, backend=fake, l2_bytes=L2_BYTES, make_flush=fake.make_flush)
    assert timer.caches == ("warm",) and fake.flush_sizes == []
    sampled = sample_interleaved(timer, {"w": (lambda: None, lambda: fake.run("work"))}, SHORT)
    assert [s.cache for s in sampled["w"]] == ["warm"] and "flush" not in fake.log


def test_gpu_only_timing_paths_are_declared_with_their_reason() -> None:
    assert set(GPU_ONLY_TIMING) == {"cuda_graph", "cold_l2"}
    assert all("CUDA device" in reason for reason in GPU_ONLY_TIMING.values())
    assert timing_unavailable_reason("cuda_graph", "cpu") == (
        "CUDA-graph capture and replay needs a CUDA device, got cpu"
    )
    assert "got npu:1" in str(timing_unavailable_reason("cold_l2", "npu:1"))
    assert timing_unavailable_reason("cuda_graph", "cuda:0") is None
    assert timing_unavailable_reason("warm", "cpu") is None  # not GPU-only


class FakeStream:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def wait_stream(self, other: "FakeStream") -> None:
        self.log.append(f"{self.name} waits {other.name}")


class FakeGraph:
    def __init__(self, graphs: "FakeGraphs") -> None:
        self.graphs = graphs
        self.kernels: list[Callable[[str], None]] = []

    def replay(self) -> None:
        self.graphs.log.append("replay")
        for kernel in self.kernels:
            kernel(self.graphs.current.name)


class FakeGraphs:
    """`torch.cuda` as graph_replay uses it. A kernel launched while a graph captures is recorded
    into the graph, not run, as on a GPU; replay runs what was recorded."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.current = FakeStream("default", self.log)
        self.capturing: Optional[FakeGraph] = None
        self.graphs: list[FakeGraph] = []

    def Stream(self) -> FakeStream:
        return FakeStream("side", self.log)

    @contextlib.contextmanager
    def stream(self, stream: FakeStream) -> Iterator[None]:
        previous, self.current = self.current, stream
        try:
            yield
        finally:
            self.current = previous

    def current_stream(self) -> FakeStream:
        return self.current

    def CUDAGraph(self) -> FakeGraph:
        self.graphs.append(FakeGraph(self))
        return self.graphs[-1]

    @contextlib.contextmanager
    def graph(self, cuda_graph: FakeGraph) -> Iterator[None]:
        self.log.append("capture begins")
        self.capturing = cuda_graph
        try:
            yield
        finally:
            self.capturing = None
            self.log.append("capture ends")

    def launch(self, kernel: Callable[[str], None]) -> None:
        if self.capturing is not None:
            self.capturing.kernels.append(kernel)
        else:
            kernel(self.current.name)


def _counting_write(graphs: FakeGraphs) -> tuple[Callable[[], None], list[str], list[str]]:
    """A one-kernel write, the Python calls of it, and the streams its kernel ran on."""
    calls: list[str] = []
    ran_on: list[str] = []

    def work() -> None:
        calls.append("work")
        graphs.launch(ran_on.append)

    return work, calls, ran_on


def test_graph_replay_warms_up_on_a_side_stream_then_captures_once() -> None:
    graphs = FakeGraphs()
    work, calls, ran_on = _counting_write(graphs)
    graph_replay(work, "cuda:0", graphs, warmup=3)
    assert ran_on == ["side"] * 3  # warm-up ran, on the side stream; the capture ran nothing
    assert len(calls) == 3 + 1 and len(graphs.graphs) == 1 and len(graphs.graphs[0].kernels) == 1
    assert graphs.log == [
        "side waits default",  # the side stream starts after what the caller queued
        "default waits side",  # and the capture after the warm-up
        "capture begins",
        "capture ends",
    ]


def test_each_replay_runs_the_captured_write_once_without_calling_it() -> None:
    graphs = FakeGraphs()
    work, calls, ran_on = _counting_write(graphs)
    step = graph_replay(work, "cuda", graphs, warmup=2)
    ran_on.clear()
    for replays in range(1, 5):
        step()
        assert ran_on == ["default"] * replays  # one replay, one write, on the caller's stream
    assert len(calls) == 2 + 1  # replay launches the graph; the Python of the write never reruns


def test_a_write_that_cannot_be_captured_raises_graph_capture_error_with_the_reason() -> None:
    graphs = FakeGraphs()

    def host_sync() -> None:
        if graphs.capturing is not None:
            raise RuntimeError(
                "CUDA error: operation not permitted when stream is capturing\n"
                "CUDA kernel errors might be asynchronously reported"
            )

    with pytest.raises(GraphCaptureError) as caught:
        graph_replay(host_sync, "cuda", graphs)
    assert str(caught.value) == (
        "cannot capture the write in a CUDA graph: "
        "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    )
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert graphs.log[-1] == "capture ends"  # the capture was closed, not left open


def test_an_error_during_warm_up_is_the_writes_own() -> None:
    graphs = FakeGraphs()

    def broken() -> None:
        raise IndexError("slot 9 out of range")

    with pytest.raises(IndexError, match="slot 9"):
        graph_replay(broken, "cuda", graphs)
    assert graphs.graphs == []  # nothing was captured


@pytest.mark.parametrize("device", ["cpu", "npu:0"])
def test_graph_replay_refuses_a_device_that_is_not_cuda(device: str) -> None:
    graphs = FakeGraphs()
    with pytest.raises(ValueError, match=f"CUDA graphs need a cuda device, got {device}"):
        graph_replay(lambda: None, device, graphs)
    assert graphs.log == [] and graphs.graphs == []


def test_a_replayed_graph_is_timed_warm_and_cold_one_replay_per_sample() -> None:
    device, graphs = FakeDevice(), FakeGraphs()
    step = graph_replay(lambda: graphs.launch(lambda stream: device.run("work")), "cuda", graphs)
    device.log.clear()
    sampled = sample_interleaved(device.timer(), {"g": (lambda: None, step)}, SHORT)["g"]
    assert not isinstance(sampled, Exception)
    assert [s.cache for s in sampled] == ["warm", "cold"]
    assert all(s.ns == (250_000,) * 5 for s in sampled)
    assert device.log.count("work") == 2 * (2 + 5) == graphs.log.count("replay")
    assert device.log.count("flush") == 2 + 5


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_MISSING is not None, reason=str(CUDA_MISSING))
def test_graph_replay_on_cuda_replays_the_write_and_is_timed_warm_and_cold() -> None:
    data = torch.zeros(1 << 16, device="cuda")
    step = graph_replay(lambda: data.add_(1), "cuda", warmup=3)
    torch.cuda.synchronize()
    assert torch.all(data == 3)  # the warm-up ran; the capture did not
    step()
    step()
    torch.cuda.synchronize()
    assert torch.all(data == 5)  # one replay, one add
    budget = Budget(warmup=1, warmup_s=0.0, min_samples=3, max_samples=3, min_time_s=0.0)
    sampled = sample_interleaved(EventTimer("cuda"), {"graph": (lambda: None, step)}, budget)
    results = sampled["graph"]
    assert not isinstance(results, Exception), results
    assert [s.cache for s in results] == ["warm", "cold"]
    assert all(len(s.ns) == 3 and min(s.ns) > 0 for s in results)
    torch.cuda.synchronize()
    assert torch.all(data == data[0]) and data[0].item() >= 5 + 2 * (1 + 3)


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_MISSING is not None, reason=str(CUDA_MISSING))
def test_a_host_sync_on_cuda_is_a_graph_capture_error() -> None:
    data = torch.ones(1024, device="cuda")
    with pytest.raises(GraphCaptureError, match="cannot capture the write in a CUDA graph"):
        graph_replay(lambda: data.sum().item(), "cuda", warmup=1)
    torch.cuda.synchronize()  # the device is still usable after the failed capture
    assert torch.all(data.add_(1) == 2)


@pytest.mark.skipif(CUDA_MISSING is not None, reason=str(CUDA_MISSING))
def test_a_bench_cell_replays_its_layers_in_one_graph_and_writes_the_same_bytes() -> None:
    from harness.bench.measure import TimedWrite
    from harness.bench.plan import bench_scenario
    from pools.builtin.sut import builtin_module

    scenario = bench_scenario("swa_mha", "bf16", 16, 2, seed=0)
    module = builtin_module("current", "torch")
    launched = TimedWrite(module, scenario, "cuda", "plain", "current", "extend")
    graphed = TimedWrite(module, scenario, "cuda", "plain", "current", "extend", cuda_graph=True)
    assert len(graphed.writes) == 1  # both layers in one replay
    for write in (launched, graphed):
        write.restore()
        write.run()
    ours, theirs = launched.snapshot(), graphed.snapshot()
    assert ours.buffers.keys() == theirs.buffers.keys()
    assert all(ours.buffers[name].equal(theirs.buffers[name]) for name in ours.buffers)


def test_cuda_graph_timing_off_cuda_is_a_usage_error_naming_why(tmp_path, capsys) -> None:
    from harness.cli import main

    assert main(["bench", "--cuda-graph", "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "--cuda-graph: CUDA-graph capture and replay needs a CUDA device, got cpu" in (
        capsys.readouterr().err
    )
    assert not any(tmp_path.iterdir())
