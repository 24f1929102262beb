"""Timers per device type, declared as a registry. A timer times one iteration at a time;
`harness/bench/interleave.py` decides which write runs next and keeps the raw samples.

CPU uses perf_counter_ns; CUDA, NPU and XPU use the device's own events and synchronisation.
On CUDA, "cold" samples flush the L2 cache before each iteration and "warm" samples do not;
both are reported. No other device flushes, so it reports "warm" only. The device API, the L2
size and the flush are arguments of EventTimer, so its control flow is tested on CPU with fakes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

import torch

from harness.plan.devices import device_type

Step = Callable[[], None]

# Timing paths that exist only on a CUDA device, and why: so the bench and `kvh matrix` can declare
# them GPU-only (never planned elsewhere) instead of finding out when a cell fails.
GPU_ONLY_TIMING: dict[str, str] = {
    "cuda_graph": "CUDA-graph capture and replay needs a CUDA device",
    "cold_l2": "flushing the L2 cache before each sample needs a CUDA device and its L2 size",
}


def timing_unavailable_reason(path: str, device: str) -> Optional[str]:
    """None if timing path `path` can run on `device`, else why not (a GPU-only path off CUDA)."""
    if path in GPU_ONLY_TIMING and device_type(device) != "cuda":
        return f"{GPU_ONLY_TIMING[path]}, got {device}"
    return None


@dataclass(frozen=True)
class Budget:
    warmup: int = 3  # untimed iterations per write, at least ...
    warmup_s: float = 0.2  # ... and this much untimed time: the first writes of a run are slow
    min_samples: int = 10
    max_samples: int = 2_000
    min_time_s: float = 0.2  # measured time per write, at least
    slice_s: float = 0.02  # a write's turn, before the next write of its group runs

    def done(self, samples: list[int]) -> bool:
        if len(samples) >= self.max_samples:
            return True
        return len(samples) >= self.min_samples and sum(samples) >= self.min_time_s * 1e9

    def warmup_budget(self) -> "Budget":
        return Budget(
            warmup=0,
            warmup_s=0.0,
            min_samples=self.warmup,
            max_samples=self.max_samples,
            min_time_s=self.warmup_s,
            slice_s=self.slice_s,
        )

    def samples_per_turn(self) -> int:
        """A turn's sample cap: a fast write reaches max_samples over as many turns as a slow one
        needs to reach min_time_s, so the writes of a group finish together."""
        turns = max(1, round(self.min_time_s / self.slice_s))
        return max(1, -(-self.max_samples // turns))


@dataclass(frozen=True)
class Samples:
    cache: str  # "warm" or "cold"
    timer: str  # which clock measured them
    ns: tuple[int, ...]  # one per iteration, in the order taken


def join_samples(first: list[Samples], later: list[Samples]) -> list[Samples]:
    """Samples of two passes of one write, cache state by cache state, in the order taken."""
    taken = {samples.cache: samples for samples in later}
    joined = [
        Samples(s.cache, s.timer, s.ns + taken.pop(s.cache).ns) if s.cache in taken else s
        for s in first
    ]
    return joined + list(taken.values())


class CpuTimer:
    name = "perf_counter_ns"
    caches = ("warm",)

    def __init__(self, device: str):
        self.device = device

    def prepare(self, cache: str) -> None:
        """Nothing to flush on CPU."""

    def time_one(self, work: Step) -> int:
        started = time.perf_counter_ns()
        work()
        return time.perf_counter_ns() - started

    def synchronize(self) -> None:
        """CPU work is synchronous."""


class DeviceEvent(Protocol):
    def record(self) -> None: ...
    def synchronize(self) -> None: ...
    def elapsed_time(self, end: "DeviceEvent") -> float: ...  # milliseconds


class DeviceApi(Protocol):
    """The part of `torch.cuda` (or `torch.npu`, `torch.xpu`) an EventTimer uses."""

    def Event(self, enable_timing: bool = ...) -> DeviceEvent: ...  # torch's name
    def synchronize(self, device: str) -> None: ...


FlushFactory = Callable[[int, str], Step]  # (bytes to write, device) -> one flush


def flush_bytes(l2_bytes: int) -> int:
    """Twice the L2: a write this big evicts every line the previous iteration left there."""
    return max(2 * l2_bytes, 1 << 20)


def scratch_fill(nbytes: int, device: str) -> Step:
    """A flush that overwrites a scratch buffer of `nbytes` on `device`."""
    scratch = torch.empty(nbytes, dtype=torch.uint8, device=device)
    return lambda: scratch.fill_(0x5A)


def cuda_l2_bytes(device: str) -> int:
    return torch.cuda.get_device_properties(torch.device(device)).L2_cache_size


class EventTimer:
    """Device events around `work`, synchronised after each iteration; samples in ns.

    `backend` (default `torch.<device type>`), `l2_bytes` (default: the CUDA device's L2 size)
    and `make_flush` (default: a scratch buffer on the device) are taken as arguments so a test
    can drive the warm/cold control flow with fakes on a machine without the device."""

    def __init__(
        self,
        device: str,
        backend: Optional[DeviceApi] = None,
        l2_bytes: Optional[int] = None,
        make_flush: FlushFactory = scratch_fill,
    ):
        self.device = device
        self.backend = backend if backend is not None else getattr(torch, device_type(device))
        self.name = f"torch.{device_type(device)}.Event"
        self._flush = self._l2_flush(l2_bytes, make_flush)
        self.caches = ("warm", "cold") if self._flush is not None else ("warm",)

    def _l2_flush(self, l2_bytes: Optional[int], make_flush: FlushFactory) -> Optional[Step]:
        """A write bigger than L2 before an iteration evicts
        the previous one's lines (CUDA only)."""
        if device_type(self.device) != "cuda":
            return None
        if l2_bytes is None:
            l2_bytes = cuda_l2_bytes(self.device)
        return make_flush(flush_bytes(l2_bytes), self.device)

    def prepare(self, cache: str) -> None:
        if cache == "cold":
            self._flush()

    def time_one(self, work: Step) -> int:
        start, end = self.backend.Event(enable_timing=True), self.backend.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        return int(start.elapsed_time(end) * 1e6)  # elapsed_time is in ms

    def synchronize(self) -> None:
        self.backend.synchronize(self.device)


TIMERS: dict[str, type] = {
    "cpu": CpuTimer,
    "cuda": EventTimer,
    "npu": EventTimer,
    "xpu": EventTimer,
}


def timer_for(device: str):
    """The timer of `device`; ValueError where no timer is declared for its type."""
    kind = device_type(device)
    if kind not in TIMERS:
        raise ValueError(f"no timer for device type {kind!r}; timers exist for {', '.join(TIMERS)}")
    return TIMERS[kind](device)
