"""Bench records: a timed cell's verdict and samples, and the results-store rows built from it,
one per cache state.

The columns are the store's "bench" kind (reports/schema.py, the only list of them); every row
is validated against it. docs/bench.md documents each column. Raw samples are kept in the list
column samples_ns; the run's metadata is stamped by `reports.store.append`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import torch

from harness.bench.plan import BenchCell, baseline_cell, written_layers
from harness.bench.timers import Samples
from harness.bench.timing_stats import ab_test, ratio_of_medians, summarize
from harness.bench.verify import Verdict
from reports.schema import validate_row
from scenarios.model import Scenario

KIND = "bench"


@dataclass
class TimedCell:
    """One bench cell after timing and verification: its verdict, and samples when measured."""

    cell: BenchCell
    verdict: Verdict
    samples: list[Samples] = field(default_factory=list)
    passes: int = 1  # passes whose samples are pooled here
    timed_code: str = ""  # what the timed call ran: the release's backend class, or the model


def sut_baseline(
    result: TimedCell, results: dict[str, TimedCell], suts: list[str]
) -> Optional[TimedCell]:
    """The cell a foreign SUT's cell is compared with: the first SUT's (in --sut order) measured
    cell of the same backend, mode and engine, through the same era where it has that cell, else
    through its own era (two releases of different eras are still compared on one write)."""
    cell = result.cell
    if cell.sut.loaded is None or cell.sut.spec not in suts:
        return None
    for spec in suts[: suts.index(cell.sut.spec)]:
        theirs = [
            other
            for other in results.values()
            if other.cell.sut.spec == spec
            and other.samples
            and (other.cell.backend, other.cell.mode, other.cell.engine)
            == (cell.backend, cell.mode, cell.engine)
        ]
        same_era = [other for other in theirs if other.cell.era == cell.era]
        if same_era or len(theirs) == 1:
            return (same_era or theirs)[0]
    return None


def bench_row(
    result: TimedCell,
    cache: Samples | None,
    scenario: Scenario,
    nbytes: int,
    copy: dict[str, Samples],
    results: dict[str, TimedCell],
    seed: int,
    suts: Sequence[str] = (),
) -> dict:
    """The row of `result` in cache state `cache` (None: the cell has no samples); `copy` holds
    the roofline copy's samples by cache state, `results` the other cells of its scenario (for
    the API overhead ratio against the oldest measured era, and a foreign SUT's ratio to the
    first of `suts`, the --sut specs in order)."""
    cell, g = result.cell, scenario.geometry
    loaded = cell.sut.loaded
    row = {
        "backend": cell.backend,
        "mode": cell.mode,
        "pool": g.pool,
        "dtype": g.dtype,
        "sut": cell.sut.spec,
        "sut_version": loaded.version if loaded else "builtin",
        "engine": cell.engine,
        "era": cell.era,
        "tokens": scenario.forwards[0].tokens,
        "layers": written_layers(scenario),
        "bytes_moved": nbytes,
        "outcome": result.verdict.outcome.value,
        "passes": result.passes,
        "error": result.verdict.message,
        "threads": torch.get_num_threads(),
        "load_avg_1m": os.getloadavg()[0],
        "samples_ns": [],
        "timed_code": result.timed_code,
    }
    if cache is None:
        return validate_row(KIND, row)
    stats = summarize(cache.ns)
    seconds = stats.median_ns / 1e9
    row.update(
        cache=cache.cache,
        timer=cache.timer,
        samples=len(cache.ns),
        samples_ns=list(cache.ns),
        median_ns=stats.median_ns,
        p10_ns=stats.p10_ns,
        p90_ns=stats.p90_ns,
        cv=stats.cv,
        mad_cv=stats.mad_cv,
        tokens_per_s=scenario.forwards[0].tokens / seconds,
        gbps=nbytes / seconds / 1e9,
        call_us=stats.median_ns / written_layers(scenario) / 1e3,
    )
    if cache.cache in copy:
        copy_ns = summarize(copy[cache.cache].ns).median_ns
        row.update(
            copy_median_ns=copy_ns,
            peak_gbps=nbytes / copy_ns,
            roofline_fraction=copy_ns / stats.median_ns,
        )
    old = baseline_cell(
        cell, lambda other: bool(other.label in results and results[other.label].samples)
    )
    old_samples = {s.cache: s for s in results[old.label].samples} if old else {}
    if cache.cache in old_samples:
        ratio = ratio_of_medians(cache.ns, old_samples[cache.cache].ns, seed)
        row.update(
            api_baseline_era=old.era,
            api_overhead_ratio=ratio.value,
            api_overhead_ci_low=ratio.low,
            api_overhead_ci_high=ratio.high,
        )
    row.update(_sut_ratio(result, cache, results, list(suts), seed))
    return validate_row(KIND, row)


def _sut_ratio(
    result: TimedCell, cache: Samples, results: dict[str, TimedCell], suts: list[str], seed: int
) -> dict:
    first = sut_baseline(result, results, suts)
    theirs = {s.cache: s for s in first.samples} if first is not None else {}
    if cache.cache not in theirs:
        return {}
    ratio = ratio_of_medians(cache.ns, theirs[cache.cache].ns, seed)
    difference = ab_test(cache.ns, theirs[cache.cache].ns)
    return dict(
        sut_baseline=first.cell.sut.spec,
        sut_ratio=ratio.value,
        sut_ratio_ci_low=ratio.low,
        sut_ratio_ci_high=ratio.high,
        sut_ratio_test=difference.test,
        sut_ratio_p=difference.p_value,
    )
