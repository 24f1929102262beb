"""Timers keep raw samples, run the untimed setup before every timed iteration, and stop on budget."""
from __future__ import annotations

import pytest
import torch

from harness.bench_stats import ratio_of_medians, summarize
from harness.devices import unavailable_reason
from harness.timers import TIMERS, Budget, CpuTimer, timer_for


def test_cpu_timer_runs_setup_before_each_iteration_and_keeps_raw_samples() -> None:
    calls: list[str] = []
    budget = Budget(warmup=2, min_samples=7, max_samples=7, min_time_s=0.0)
    (samples,) = CpuTimer("cpu").measure(lambda: calls.append("setup"), lambda: calls.append("work"),
                                         budget)
    assert samples.cache == "warm" and samples.timer == "perf_counter_ns"
    assert len(samples.ns) == 7 and all(ns >= 0 for ns in samples.ns)
    assert calls == ["setup", "work"] * (2 + 7)


def test_budget_needs_both_count_and_measured_time() -> None:
    budget = Budget(warmup=0, min_samples=2, max_samples=100, min_time_s=1e-6)
    assert not budget.done([400])          # too few samples
    assert not budget.done([100, 100])     # too little measured time
    assert budget.done([600, 600])
    assert budget.done([1] * 100)          # the cap wins


def test_every_declared_device_type_has_a_timer() -> None:
    assert set(TIMERS) >= {"cpu", "cuda", "npu", "xpu"}
    with pytest.raises(ValueError, match="no timer"):
        timer_for("musa")


@pytest.mark.skipif(unavailable_reason("cuda") is not None, reason=str(unavailable_reason("cuda")))
def test_cuda_timer_reports_warm_and_cold() -> None:
    data = torch.zeros(1 << 20, device="cuda")
    budget = Budget(warmup=1, min_samples=3, max_samples=3, min_time_s=0.0)
    results = timer_for("cuda").measure(lambda: None, lambda: data.add_(1), budget)
    assert [s.cache for s in results] == ["warm", "cold"] and all(len(s.ns) == 3 for s in results)


def test_summary_and_bootstrap_ratio() -> None:
    old = [100, 102, 98, 101, 99, 100, 103, 97]
    new = [2 * value for value in old]
    stats = summarize(old)
    assert stats.p10_ns <= stats.median_ns == 100 <= stats.p90_ns
    assert 0 < stats.mad_cv <= stats.cv * 2
    ratio = ratio_of_medians(new, old, seed=0)
    assert ratio.value == 2.0 and ratio.low <= 2.0 <= ratio.high
    assert ratio == ratio_of_medians(new, old, seed=0)   # seeded: reproducible
