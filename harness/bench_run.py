"""The bench loop: per scenario, the reference once, every cell timed and verified, the roofline
copy, and the API overhead ratios; one record per cell and cache state."""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from backends.registry import BACKENDS
from harness.bench_measure import TimedWrite, measure_copy
from harness.bench_plan import BenchCell, BenchOptions, bench_scenario, bytes_moved, cells_for, old_era_cell
from harness.bench_stats import ratio_of_medians, summarize
from harness.bench_verify import Reference, Verdict
from harness.execute import Execution
from harness.plan import SutChoice
from harness.timeout import time_limit
from harness.timers import Samples, timer_for
from pools.builtin import builtin_module
from scenarios.model import Scenario

Progress = Callable[[str], None]


@dataclass
class CellResult:
    cell: BenchCell
    verdict: Verdict
    samples: list[Samples] = field(default_factory=list)


def measure_cell(cell: BenchCell, scenario: Scenario, reference: Reference, options: BenchOptions,
                 timer) -> CellResult:
    """Time the cell's write, then verify the bytes of its last timed write."""
    module = cell.sut.loaded.module if cell.sut.loaded else builtin_module(cell.era, cell.engine)
    samples: list[Samples] = []
    try:
        with time_limit(options.timeout_s):
            timed = TimedWrite(module, scenario, options.device, cell.backend, cell.era, cell.mode)
            samples = timer.measure(timed.restore, timed.run, options.budget)
            execution = timed.snapshot()
    except Exception as error:  # a SUT failure is data, never a harness crash
        frames = traceback.extract_tb(error.__traceback__)
        origin = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
        execution = Execution(error=f"{type(error).__name__}: {error}{origin}", error_at="timing")
    verdict = reference.judge(execution)
    return CellResult(cell, verdict, samples if verdict.outcome == "measured" else [])


def _groups(options: BenchOptions):
    for backend_name in options.backends:
        backend = BACKENDS[backend_name]
        for pool in options.pools:
            if pool not in backend.pool_kinds:
                continue
            for dtype in options.dtypes:
                for tokens in options.tokens:
                    for layers in options.layers:
                        yield backend, pool, dtype, tokens, layers


def _row(result: CellResult, cache: Optional[Samples], scenario: Scenario, nbytes: int,
         copy: dict[str, Samples], results: dict, meta: dict, seed: int) -> dict:
    cell, g = result.cell, scenario.geometry
    loaded = cell.sut.loaded
    row = {**meta, "backend": cell.backend, "mode": cell.mode, "pool": g.pool, "dtype": g.dtype,
           "sut": cell.sut.spec, "sut_version": loaded.version if loaded else "builtin",
           "engine": cell.engine, "era": cell.era, "tokens": scenario.forwards[0].tokens,
           "layers": g.layer_num, "bytes_moved": nbytes, "outcome": result.verdict.outcome,
           "error": result.verdict.message, "threads": torch.get_num_threads(),
           "load_avg_1m": os.getloadavg()[0], "samples_ns": []}
    if cache is None:
        return row
    stats = summarize(cache.ns)
    seconds = stats.median_ns / 1e9
    row.update(cache=cache.cache, timer=cache.timer, samples=len(cache.ns), samples_ns=list(cache.ns),
               median_ns=stats.median_ns, p10_ns=stats.p10_ns, p90_ns=stats.p90_ns, cv=stats.cv,
               mad_cv=stats.mad_cv,
               tokens_per_s=scenario.forwards[0].tokens / seconds, gbps=nbytes / seconds / 1e9)
    if cache.cache in copy:
        copy_ns = summarize(copy[cache.cache].ns).median_ns
        row.update(copy_median_ns=copy_ns, peak_gbps=nbytes / copy_ns,
                   roofline_fraction=copy_ns / stats.median_ns)
    old = old_era_cell(cell)
    old_samples = {s.cache: s for s in results[old.label].samples} if old and old.label in results else {}
    if cache.cache in old_samples:
        ratio = ratio_of_medians(cache.ns, old_samples[cache.cache].ns, seed)
        row.update(api_baseline_era=old.era, api_overhead_ratio=ratio.value,
                   api_overhead_ci_low=ratio.low, api_overhead_ci_high=ratio.high)
    return row


def run_bench(options: BenchOptions, suts: list[SutChoice], meta: dict,
              progress: Progress = lambda line: None) -> list[dict]:
    timer = timer_for(options.device)
    groups = list(_groups(options))
    copies: dict[int, dict[str, Samples]] = {}
    rows: list[dict] = []
    for index, (backend, pool, dtype, tokens, layers) in enumerate(groups):
        scenario = bench_scenario(pool, dtype, tokens, layers, options.seed)
        nbytes = bytes_moved(scenario)
        if nbytes not in copies:
            copies[nbytes] = {s.cache: s for s in measure_copy(nbytes, options.device, timer, options.budget)}
        for mode in backend.modes:
            reference = Reference(scenario, backend.name, mode, None)
            results: dict[str, CellResult] = {}   # by cell label
            for cell in cells_for(backend.name, (mode,), backend.eras, suts, options):
                results[cell.label] = result = measure_cell(cell, scenario, reference, options, timer)
                progress(f"[{index + 1}/{len(groups)}] {pool} {dtype} {tokens}t {layers}l "
                         f"{cell.label}: {_headline(result, nbytes)}")
            del reference
            for result in results.values():
                for cache in result.samples or [None]:
                    rows.append(_row(result, cache, scenario, nbytes, copies[nbytes], results, meta,
                                     options.seed))
    return rows


def _headline(result: CellResult, nbytes: int) -> str:
    if not result.samples:
        return f"{result.verdict.outcome.upper()} {result.verdict.message}"
    stats = summarize(result.samples[0].ns)
    return (f"median {stats.median_ns / 1e3:.1f} us (cv {stats.cv:.2f}, mad_cv {stats.mad_cv:.2f}, "
            f"{len(result.samples[0].ns)} "
            f"samples), {nbytes / stats.median_ns:.2f} GB/s")
