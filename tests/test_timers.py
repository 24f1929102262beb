"""Timers and interleaved sampling: raw samples kept, the untimed setup before every timed
iteration, writes taking turns, a failing write reported without stopping the others."""

from __future__ import annotations

import time

import pytest
import torch

from harness.bench.interleave import sample_interleaved
from harness.bench.timers import TIMERS, Budget, CpuTimer, timer_for
from harness.bench.timing_stats import ratio_of_medians, summarize
from harness.plan.devices import unavailable_reason


def test_cpu_timer_runs_setup_before_each_iteration_and_keeps_raw_samples() -> None:
    calls: list[str] = []
    budget = Budget(warmup=2, warmup_s=0.0, min_samples=7, max_samples=7, min_time_s=0.0)
    sampled = sample_interleaved(
        CpuTimer("cpu"),
        {"only": (lambda: calls.append("setup"), lambda: calls.append("work"))},
        budget,
    )
    (samples,) = sampled["only"]
    assert samples.cache == "warm" and samples.timer == "perf_counter_ns"
    assert len(samples.ns) == 7 and all(ns >= 0 for ns in samples.ns)
    assert calls == ["setup", "work"] * (2 + 7)


def test_writes_take_turns_in_rotating_order() -> None:
    order: list[str] = []
    # One sample per turn (4 turns of 1 ns for 4 ns of measured time), and no untimed filler.
    budget = Budget(
        warmup=0, warmup_s=0.0, min_samples=4, max_samples=4, min_time_s=4e-9, slice_s=1e-9
    )
    assert budget.samples_per_turn() == 1
    writes = {name: (lambda: None, lambda name=name: order.append(name)) for name in "abc"}
    sampled = sample_interleaved(CpuTimer("cpu"), writes, budget)
    assert all(len(sampled[name][0].ns) == 4 for name in "abc")
    assert order == list("abcbcacababc")


def test_a_fast_write_fills_its_turns_untimed_so_its_samples_span_every_turn() -> None:
    calls = {"n": 0}
    budget = Budget(
        warmup=0, warmup_s=0.0, min_samples=1, max_samples=10, min_time_s=0.05, slice_s=0.005
    )
    assert budget.samples_per_turn() == 1  # 10 samples over the 10 turns that 50 ms need
    started = time.perf_counter()
    sampled = sample_interleaved(
        CpuTimer("cpu"),
        {"fast": (lambda: None, lambda: calls.__setitem__("n", calls["n"] + 1))},
        budget,
    )
    assert len(sampled["fast"][0].ns) == 10
    assert calls["n"] > 10  # untimed writes filled the turns
    assert time.perf_counter() - started >= 9 * 0.005  # a turn lasts its slice


def test_a_failing_write_is_reported_and_the_others_are_still_timed() -> None:
    calls = {"good": 0}

    def fails() -> None:
        raise RuntimeError("boom")

    budget = Budget(warmup=1, warmup_s=0.0, min_samples=5, max_samples=5, min_time_s=0.0)
    sampled = sample_interleaved(
        CpuTimer("cpu"),
        {
            "bad": (lambda: None, fails),
            "good": (lambda: None, lambda: calls.__setitem__("good", calls["good"] + 1)),
        },
        budget,
    )
    assert isinstance(sampled["bad"], RuntimeError)
    assert len(sampled["good"][0].ns) == 5 and calls["good"] == 1 + 5


def test_warm_up_takes_its_minimum_time_untimed() -> None:
    budget = Budget(warmup=1, warmup_s=0.05, min_samples=1, max_samples=1_000_000, min_time_s=0.0)
    calls: list[float] = []

    def spin() -> None:
        calls.append(time.perf_counter())
        time.sleep(0.001)

    (samples,) = sample_interleaved(CpuTimer("cpu"), {"w": (lambda: None, spin)}, budget)["w"]
    # One timed call, after warm-up calls that spanned at least the 50 ms asked (a loaded
    # machine only makes them longer, never shorter).
    assert len(samples.ns) == 1 and len(calls) >= 2
    assert calls[-1] - calls[0] >= 0.05


def test_budget_needs_both_count_and_measured_time() -> None:
    budget = Budget(warmup=0, min_samples=2, max_samples=100, min_time_s=1e-6)
    assert not budget.done([400])  # too few samples
    assert not budget.done([100, 100])  # too little measured time
    assert budget.done([600, 600])
    assert budget.done([1] * 100)  # the cap wins


def test_every_declared_device_type_has_a_timer() -> None:
    assert set(TIMERS) >= {"cpu", "cuda", "npu", "xpu"}
    with pytest.raises(ValueError, match="no timer"):
        timer_for("musa")


@pytest.mark.gpu
@pytest.mark.skipif(unavailable_reason("cuda") is not None, reason=str(unavailable_reason("cuda")))
def test_cuda_timer_reports_warm_and_cold() -> None:
    data = torch.zeros(1 << 20, device="cuda")
    budget = Budget(warmup=1, min_samples=3, max_samples=3, min_time_s=0.0)
    results = sample_interleaved(
        timer_for("cuda"), {"add": (lambda: None, lambda: data.add_(1))}, budget
    )["add"]
    assert [s.cache for s in results] == ["warm", "cold"] and all(len(s.ns) == 3 for s in results)


def test_summary_and_bootstrap_ratio() -> None:
    old = [100, 102, 98, 101, 99, 100, 103, 97]
    new = [2 * value for value in old]
    stats = summarize(old)
    assert stats.p10_ns <= stats.median_ns == 100 <= stats.p90_ns
    assert 0 < stats.mad_cv <= stats.cv * 2
    ratio = ratio_of_medians(new, old, seed=0)
    assert ratio.value == 2.0 and ratio.low <= 2.0 <= ratio.high
    assert ratio == ratio_of_medians(new, old, seed=0)  # seeded: reproducible
