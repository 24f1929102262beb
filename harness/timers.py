"""Timers per device type, declared as a registry: every one keeps its raw samples.

A timer runs `setup` (untimed: restores the caller's inputs so every iteration does identical
work) and then `work` (timed), after warm-up, until both a minimum sample count and a minimum
measured time are reached. CPU uses perf_counter_ns; CUDA, NPU and XPU use the device's own
events and synchronisation. On CUDA, "cold" samples flush the L2 cache before each iteration
and "warm" samples do not; both are reported. No other device flushes, so it reports "warm".
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from harness.devices import device_type

Step = Callable[[], None]


@dataclass(frozen=True)
class Budget:
    warmup: int = 3
    min_samples: int = 10
    max_samples: int = 2_000
    min_time_s: float = 0.2

    def done(self, samples: list[int]) -> bool:
        if len(samples) >= self.max_samples:
            return True
        return len(samples) >= self.min_samples and sum(samples) >= self.min_time_s * 1e9


@dataclass(frozen=True)
class Samples:
    cache: str           # "warm" or "cold"
    timer: str           # which clock measured them
    ns: tuple[int, ...]  # one per iteration, in the order taken


class CpuTimer:
    name = "perf_counter_ns"

    def __init__(self, device: str):
        self.device = device

    def measure(self, setup: Step, work: Step, budget: Budget) -> list[Samples]:
        for _ in range(budget.warmup):
            setup()
            work()
        samples: list[int] = []
        while not budget.done(samples):
            setup()
            started = time.perf_counter_ns()
            work()
            samples.append(time.perf_counter_ns() - started)
        return [Samples("warm", self.name, tuple(samples))]


class EventTimer:
    """Device events around `work`, synchronised after each iteration; raw samples in ns."""

    def __init__(self, device: str):
        self.device = device
        self.backend = getattr(torch, device_type(device))
        self.name = f"torch.{device_type(device)}.Event"

    def _l2_flush(self) -> Optional[Step]:
        """A write bigger than L2 before each iteration evicts the previous one's lines (CUDA only)."""
        if device_type(self.device) != "cuda":
            return None
        l2_bytes = torch.cuda.get_device_properties(torch.device(self.device)).L2_cache_size
        scratch = torch.empty(max(2 * l2_bytes, 1 << 20), dtype=torch.uint8, device=self.device)
        return lambda: scratch.fill_(0x5A)

    def _run(self, setup: Step, work: Step, budget: Budget, before: Optional[Step]) -> tuple[int, ...]:
        for _ in range(budget.warmup):
            setup()
            work()
        self.backend.synchronize(self.device)
        samples: list[int] = []
        while not budget.done(samples):
            setup()
            if before is not None:
                before()
            start, end = self.backend.Event(enable_timing=True), self.backend.Event(enable_timing=True)
            start.record()
            work()
            end.record()
            end.synchronize()
            samples.append(int(start.elapsed_time(end) * 1e6))
        return tuple(samples)

    def measure(self, setup: Step, work: Step, budget: Budget) -> list[Samples]:
        results = [Samples("warm", self.name, self._run(setup, work, budget, None))]
        flush = self._l2_flush()
        if flush is not None:
            results.append(Samples("cold", self.name, self._run(setup, work, budget, flush)))
        return results


TIMERS: dict[str, type] = {"cpu": CpuTimer, "cuda": EventTimer, "npu": EventTimer, "xpu": EventTimer}


def timer_for(device: str):
    """The timer of `device`; ValueError where no timer is declared for its type."""
    kind = device_type(device)
    if kind not in TIMERS:
        raise ValueError(f"no timer for device type {kind!r}; timers exist for {', '.join(TIMERS)}")
    return TIMERS[kind](device)
