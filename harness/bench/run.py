"""The bench loop: per scenario, the reference once, every cell timed and verified, the roofline
copy, and the API overhead ratios; one record per cell and cache state."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from backends.registry import BACKENDS
from harness.bench.measure import TimedWrite, copy_write
from harness.bench.plan import BenchCell, BenchOptions, bench_scenario, bytes_moved, cells_for, baseline_cell
from harness.bench.stats import ratio_of_medians, summarize
from harness.bench.verify import Reference, Verdict
from harness.execute import Execution, describe_error
from harness.bench.interleave import sample_interleaved
from harness.plan import SutChoice
from harness.timeout import time_limit
from harness.bench.timers import Samples, join_samples, timer_for
from pools.builtin import builtin_module
from scenarios.model import Scenario

Progress = Callable[[str], None]


@dataclass
class CellResult:
    cell: BenchCell
    verdict: Verdict
    samples: list[Samples] = field(default_factory=list)
    passes: int = 1    # passes whose samples are pooled here


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a bench: `rows` holds what the families finished so far measured and verified."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.rows = rows


COPY = "copy"   # the same-bytes contiguous copy timed with every family


def _timed_write(cell: BenchCell, scenario: Scenario, options: BenchOptions) -> TimedWrite:
    module = cell.sut.loaded.module if cell.sut.loaded else builtin_module(cell.era, cell.engine)
    with time_limit(options.timeout_s):
        return TimedWrite(module, scenario, options.device, cell.backend, cell.era, cell.mode)


def measure_family(cells: list[BenchCell], scenario: Scenario, reference: Reference,
                   options: BenchOptions, timer) -> tuple[list[CellResult], list[Samples]]:
    """Time cells that are compared with each other, and the same-bytes copy, taking turns
    (harness/bench/interleave.py); then verify the bytes of each cell's last timed write. Returns the
    cells' results and the copy's samples."""
    timed: dict[str, TimedWrite] = {}
    failed: dict[str, str] = {}
    for cell in cells:
        try:
            timed[cell.label] = _timed_write(cell, scenario, options)
        except Exception as error:  # a SUT failure is data, never a harness crash
            failed[cell.label] = describe_error(error, source_line=True)
    writes = {label: (write.restore, write.run) for label, write in timed.items()}
    writes[COPY] = copy_write(bytes_moved(scenario), options.device)
    sampled = sample_interleaved(timer, writes, options.budget, lambda: time_limit(options.timeout_s))
    results = []
    for cell in cells:
        samples = sampled.get(cell.label, [])
        if isinstance(samples, Exception):
            failed[cell.label] = describe_error(samples, source_line=True)
        if cell.label in failed:
            execution = Execution(error=failed[cell.label], error_at="timing")
        else:
            try:
                with time_limit(options.timeout_s):
                    execution = timed[cell.label].snapshot()
            except Exception as error:
                execution = Execution(error=describe_error(error, source_line=True), error_at="timing")
        verdict = reference.judge(execution)
        results.append(CellResult(cell, verdict, samples if verdict.outcome == "measured" else []))
    copy = sampled[COPY]
    if isinstance(copy, Exception):
        raise copy   # the harness's own copy failed: no roofline can be trusted
    return results, copy


def measure_cell(cell: BenchCell, scenario: Scenario, reference: Reference, options: BenchOptions,
                 timer) -> CellResult:
    """One cell timed alone (with the copy), then verified."""
    return measure_family([cell], scenario, reference, options, timer)[0][0]


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
           "passes": result.passes,
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
    old = baseline_cell(cell, lambda other: bool(other.label in results and results[other.label].samples))
    old_samples = {s.cache: s for s in results[old.label].samples} if old else {}
    if cache.cache in old_samples:
        ratio = ratio_of_medians(cache.ns, old_samples[cache.cache].ns, seed)
        row.update(api_baseline_era=old.era, api_overhead_ratio=ratio.value,
                   api_overhead_ci_low=ratio.low, api_overhead_ci_high=ratio.high)
    return row


def _family_of(cell: BenchCell) -> tuple[str, str]:
    """Cells compared with each other share it: one SUT and engine, every era."""
    return cell.sut.spec, cell.engine


def _families(cells: list[BenchCell]) -> dict[tuple[str, str], list[BenchCell]]:
    families: dict[tuple[str, str], list[BenchCell]] = {}
    for cell in cells:
        families.setdefault(_family_of(cell), []).append(cell)
    return families


def _joined(first: CellResult, later: CellResult) -> CellResult:
    """One cell over two passes: the samples of both if both were measured, else the first
    verdict that was not `measured` (a finding in any pass makes the cell a finding)."""
    if first.verdict.outcome != "measured":
        return first
    if later.verdict.outcome != "measured":
        return later
    return CellResult(first.cell, first.verdict, join_samples(first.samples, later.samples),
                      first.passes + later.passes)


def run_bench(options: BenchOptions, suts: list[SutChoice], meta: dict,
              progress: Progress = lambda line: None) -> list[dict]:
    """Every group is timed once per pass, and the passes go over the whole plan in turn, so a
    cell's samples come from moments spread over the run: a slow spell of a shared machine
    that lasts seconds covers one pass of a cell, never the majority of its samples, and the
    median stands. Each pass verifies its own last write."""
    timer = timer_for(options.device)
    groups = list(_groups(options))
    scenarios = [bench_scenario(pool, dtype, tokens, layers, options.seed)
                 for _, pool, dtype, tokens, layers in groups]
    gathered: dict[tuple[int, str], dict[str, CellResult]] = {}   # (group, mode) -> label -> result
    copies: dict[tuple, list[Samples]] = {}                      # (group, mode, family) -> samples
    try:
        _take_passes(options, suts, timer, groups, scenarios, gathered, copies, progress)
    except KeyboardInterrupt:
        # An interrupted family left nothing behind; every finished one was measured and verified.
        raise BenchInterrupted(_rows(gathered, copies, scenarios, meta, options.seed)) from None
    return _rows(gathered, copies, scenarios, meta, options.seed)


def _take_passes(options: BenchOptions, suts: list[SutChoice], timer, groups: list, scenarios: list,
                 gathered: dict, copies: dict, progress: Progress) -> None:
    for pass_number in range(1, options.passes + 1):
        for index, (backend, pool, dtype, tokens, layers) in enumerate(groups):
            scenario, nbytes = scenarios[index], bytes_moved(scenarios[index])
            for mode in backend.modes:
                # Again each pass: keeping every group's reference buffers across passes would
                # hold gigabytes at 32768 tokens, and the reference costs one untimed write.
                reference = Reference(scenario, backend.name, mode, None)
                cells = list(cells_for(backend.name, (mode,), backend.eras, suts, options))
                results = gathered.setdefault((index, mode), {})
                for family_key, family in _families(cells).items():
                    family_results, copy = measure_family(family, scenario, reference, options, timer)
                    key = (index, mode, family_key)
                    copies[key] = join_samples(copies.get(key, []), copy)
                    for result in family_results:
                        label = result.cell.label
                        results[label] = _joined(results[label], result) if label in results else result
                        progress(f"pass {pass_number}/{options.passes} [{index + 1}/{len(groups)}] "
                                 f"{pool} {dtype} {tokens}t {layers}l {label}: {_headline(result, nbytes)}")
                del reference


def _rows(gathered: dict, copies: dict, scenarios: list[Scenario], meta: dict, seed: int) -> list[dict]:
    rows: list[dict] = []
    for (index, mode), results in gathered.items():
        scenario = scenarios[index]
        for result in results.values():
            family_copy = copies[(index, mode, _family_of(result.cell))]
            copy_by_cache = {samples.cache: samples for samples in family_copy}
            for cache in result.samples or [None]:
                rows.append(_row(result, cache, scenario, bytes_moved(scenario), copy_by_cache,
                                 results, meta, seed))
    return rows


def _headline(result: CellResult, nbytes: int) -> str:
    if not result.samples:
        return f"{result.verdict.outcome.upper()} {result.verdict.message}"
    stats = summarize(result.samples[0].ns)
    return (f"median {stats.median_ns / 1e3:.1f} us (cv {stats.cv:.2f}, mad_cv {stats.mad_cv:.2f}, "
            f"{len(result.samples[0].ns)} "
            f"samples), {nbytes / stats.median_ns:.2f} GB/s")
