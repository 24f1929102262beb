"""Timers per device type, declared as a registry. A timer times one iteration at a time;
`harness/bench/interleave.py` decides which write runs next and keeps the raw samples.

CPU uses perf_counter_ns; CUDA, NPU and XPU use the device's own events and synchronisation.
On CUDA, "cold" samples flush the L2 cache before each iteration and "warm" samples do not;
both are reported. No other device flushes, so it reports "warm" only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from harness.plan.devices import device_type

Step = Callable[[], None]


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


class EventTimer:
    """Device events around `work`, synchronised after each iteration; samples in ns."""

    def __init__(self, device: str):
        self.device = device
        self.backend = getattr(torch, device_type(device))
        self.name = f"torch.{device_type(device)}.Event"
        self._flush = self._l2_flush()
        self.caches = ("warm", "cold") if self._flush is not None else ("warm",)

    def _l2_flush(self) -> Optional[Step]:
        """A write bigger than L2 before an iteration evicts
        the previous one's lines (CUDA only)."""
        if device_type(self.device) != "cuda":
            return None
        l2_bytes = torch.cuda.get_device_properties(torch.device(self.device)).L2_cache_size
        scratch = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device=self.device)
        return lambda: scratch.fill_(0x5A)

    def prepare(self, cache: str) -> None:
        if cache == "cold":
            self._flush()

    def time_one(self, work: Step) -> int:
        start, end = self.backend.Event(enable_timing=True), self.backend.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        return int(start.elapsed_time(end) * 1e6)

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
