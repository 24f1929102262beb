"""Interleaved sampling: the writes that are compared with each other take turns.

On a shared machine a slow spell lasts from milliseconds to seconds. Timing one write to the
end and then the next puts a whole spell on one of them, so their ratio, and two runs' medians,
disagree. Here every write of a group (the era call sites of one SUT and engine, and the
same-bytes copy) runs for one short turn, in an order that rotates every round, until each has
its budget; a spell then lands on all of them. A turn times at most
`Budget.samples_per_turn()` writes and runs untimed ones for the rest of its `slice_s`, so a
1-token write's `max_samples` are spread over as many turns as a 4096-token write's
`min_time_s` of measured time. Warm-up is taken the same way, untimed.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, ContextManager, Protocol, Union

from harness.bench.timers import Budget, Samples, Step

Guard = Callable[[], ContextManager]


class TakesTurns(Protocol):
    """A write timed elsewhere (a release in its worker, harness/bench/remote.py): it takes one
    turn there, as `one_turn` takes one here, and appends the samples to `samples`."""

    def turn(
        self, cache: str, phase: str, samples: list[int], budget: Budget, per_turn: int
    ) -> None: ...


Write = Union[tuple[Step, Step], TakesTurns]  # (setup, untimed; work, timed), or timed elsewhere


def sample_interleaved(
    timer, writes: dict[str, Write], budget: Budget, guard: Guard = contextlib.nullcontext
) -> dict[str, Union[list[Samples], Exception]]:
    """Samples per write and cache state, or the exception that write raised; one write
    raising or hanging (`guard` limits each turn) does not stop the others."""
    failed: dict[str, Exception] = {}
    results: dict[str, list[Samples]] = {name: [] for name in writes}
    for cache in timer.caches:
        _take_turns(timer, writes, budget.warmup_budget(), cache, failed, guard, f"{cache}:warmup")
        timed = _take_turns(timer, writes, budget, cache, failed, guard, f"{cache}:timed")
        for name, samples in timed.items():
            results[name].append(Samples(cache, timer.name, tuple(samples)))
    return {name: failed.get(name, results[name]) for name in writes}


def _take_turns(
    timer,
    writes: dict[str, Write],
    budget: Budget,
    cache: str,
    failed: dict[str, Exception],
    guard: Guard,
    phase: str,
) -> dict[str, list[int]]:
    samples: dict[str, list[int]] = {name: [] for name in writes if name not in failed}
    per_turn = budget.samples_per_turn()
    for round_number in range(budget.max_samples):  # each round adds a sample to every active write
        active = [name for name in samples if name not in failed and not budget.done(samples[name])]
        if not active:
            break
        shift = round_number % len(active)
        for name in active[shift:] + active[:shift]:
            write = writes[name]
            try:
                with guard():
                    if isinstance(write, tuple):
                        one_turn(timer, *write, cache, samples[name], budget, per_turn)
                    else:
                        write.turn(cache, phase, samples[name], budget, per_turn)
            except Exception as error:  # a SUT failure is data, never a harness crash
                failed[name] = error
    timer.synchronize()
    return {name: taken for name, taken in samples.items() if name not in failed}


def one_turn(
    timer, setup: Step, work: Step, cache: str, samples: list[int], budget: Budget, per_turn: int
) -> None:
    """Up to `per_turn` timed writes, then untimed ones until the turn's time is up: a fast
    write's samples then span as much wall time as a slow write's, so a slow spell of the
    machine cannot cover all of them."""
    turn_ends = time.perf_counter() + budget.slice_s
    taken = 0
    while not budget.done(samples):
        setup()
        if taken < per_turn:
            timer.prepare(cache)
            samples.append(timer.time_one(work))
            taken += 1
        else:
            work()
        if time.perf_counter() >= turn_ends:
            break
    timer.synchronize()
