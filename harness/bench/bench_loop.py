"""The bench loop: per scenario, the baseline once, every cell timed and verified, the roofline
copy, and the API overhead ratios; one record per cell and cache state."""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Optional, Union

from backends.registry import BACKENDS, Backend
from harness.bench.bench_rows import TimedCell, bench_row
from harness.bench.interleave import Write, sample_interleaved
from harness.bench.measure import TimedWrite, copy_write
from harness.bench.plan import (
    BenchCell,
    BenchOptions,
    bench_scenario,
    bytes_moved,
    cells_for,
)
from harness.bench.remote import RemoteError, RemoteTimedWrite, close_remote
from harness.bench.timers import Samples, join_samples, timer_for
from harness.bench.timing_stats import summarize
from harness.bench.verify import Baseline
from harness.compare.snapshot import Execution
from harness.plan.sut_choice import SutChoice
from harness.run.execute import describe_error
from harness.run.timeout import time_limit
from harness.sut.probe.capabilities import Capabilities
from harness.sut.worker.client import IsolatedSut
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from scenarios.model import Scenario

Progress = Callable[
    [int, int, str], None
]  # (cells timed so far, cells in the run, what just finished)
BenchGroup = tuple[Backend, str, str, int, int]  # backend, pool, dtype, tokens, layers


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a bench: `rows` holds what the families
    finished so far measured and verified."""

    def __init__(self, rows: list[dict]):
        super().__init__()
        self.rows = rows


COPY = "copy"  # the same-bytes contiguous copy timed with every family


def _timed_write(
    cell: BenchCell, scenario: Scenario, options: BenchOptions
) -> Union[TimedWrite, RemoteTimedWrite]:
    """The cell's write, built where its SUT runs: a release in its worker, the rest here."""
    module = cell.sut.loaded.module if cell.sut.loaded else builtin_module(cell.era, cell.engine)
    if isinstance(module, IsolatedSut):
        candidate = dict(
            backend=cell.backend,
            mode=cell.mode,
            device=options.device,
            era=cell.era,
            cuda_graph=options.cuda_graph,
        )
        return RemoteTimedWrite(module, cell.label, scenario, candidate, _worker_limit(options))
    with time_limit(options.timeout_s):
        return TimedWrite(
            module,
            scenario,
            options.device,
            cell.backend,
            cell.era,
            cell.mode,
            options.cuda_graph,
        )


def _worker_limit(options: BenchOptions) -> float:
    """How long a worker may take to answer: the per-cell limit, or BenchOptions' default where
    --timeout left it unbounded (a worker that never answers would stop the bench)."""
    return options.timeout_s or BenchOptions.timeout_s


def _described(error: BaseException) -> str:
    """An error as the cell's reason; one from a worker is said there already."""
    return str(error) if isinstance(error, RemoteError) else describe_error(error, source_line=True)


def _steps(write: Union[TimedWrite, RemoteTimedWrite]) -> Write:
    return write if isinstance(write, RemoteTimedWrite) else (write.restore, write.run)


def measure_family(
    cells: list[BenchCell], scenario: Scenario, baseline: Baseline, options: BenchOptions, timer
) -> tuple[list[TimedCell], list[Samples]]:
    """Time cells that are compared with each other, and the same-bytes copy, taking turns
    (harness/bench/interleave.py); then verify the bytes of each cell's last timed write. Returns
    the cells' results and the copy's samples."""
    timed: dict[str, Union[TimedWrite, RemoteTimedWrite]] = {}
    failed: dict[str, str] = {}
    for cell in cells:
        try:
            timed[cell.label] = _timed_write(cell, scenario, options)
        except Exception as error:  # a SUT failure is data, never a harness crash
            failed[cell.label] = _described(error)
    writes = {label: _steps(write) for label, write in timed.items()}
    writes[COPY] = copy_write(bytes_moved(scenario), options.device)
    sampled = sample_interleaved(
        timer, writes, options.budget, lambda: time_limit(options.timeout_s)
    )
    results = []
    for cell in cells:
        samples = sampled.get(cell.label, [])
        if isinstance(samples, Exception):
            failed[cell.label] = _described(samples)
        if cell.label in failed:
            execution = Execution(error=failed[cell.label], error_at="timing")
        else:
            try:
                with time_limit(options.timeout_s):
                    execution = timed[cell.label].snapshot(baseline.known(cell.era))
            except Exception as error:
                execution = Execution(error=_described(error), error_at="timing")
        verdict = baseline.judge(execution, cell.era, _capabilities(cell))
        write = timed.get(cell.label)
        results.append(
            TimedCell(
                cell,
                verdict,
                samples if verdict.outcome == Outcome.MEASURED else [],
                timed_code=write.timed_code if write is not None else "",
            )
        )
    workers = {id(w.worker): w.worker for w in timed.values() if isinstance(w, RemoteTimedWrite)}
    for worker in workers.values():
        close_remote(worker, _worker_limit(options))
    copy = sampled[COPY]
    if isinstance(copy, Exception):
        raise copy  # the harness's own copy failed: no roofline can be trusted
    return results, copy


def _capabilities(cell: BenchCell) -> Optional[Capabilities]:
    """What a foreign SUT probed with (divergences declared for a capability apply to it)."""
    return cell.sut.loaded.capabilities if cell.sut.loaded is not None else None


def bench_groups(options: BenchOptions) -> Iterator[BenchGroup]:
    """What shares one scenario: every backend's pools, dtypes, token and layer counts."""
    for backend_name in options.backends:
        backend = BACKENDS[backend_name]
        for pool in options.pools:
            if pool not in backend.pool_kinds:
                continue
            for dtype in options.dtypes:
                for tokens in options.tokens:
                    for layers in options.layers:
                        yield backend, pool, dtype, tokens, layers


FOREIGN = "foreign SUTs"


def _family_of(cell: BenchCell) -> tuple[str, str]:
    """Cells compared with each other share it: the builtin pools of one engine, every era; and
    every foreign SUT together (releases compared with each other take turns, in their workers)."""
    return (FOREIGN, "-") if cell.sut.loaded is not None else (cell.sut.spec, cell.engine)


def _families(cells: list[BenchCell]) -> dict[tuple[str, str], list[BenchCell]]:
    families: dict[tuple[str, str], list[BenchCell]] = {}
    for cell in cells:
        families.setdefault(_family_of(cell), []).append(cell)
    return families


def _joined(first: TimedCell, later: TimedCell) -> TimedCell:
    """One cell over two passes: the samples of both if both were measured, else the first
    verdict that was not `measured` (a finding in any pass makes the cell a finding)."""
    if first.verdict.outcome != Outcome.MEASURED:
        return first
    if later.verdict.outcome != Outcome.MEASURED:
        return later
    return dataclasses.replace(
        first,
        samples=join_samples(first.samples, later.samples),
        passes=first.passes + later.passes,
    )


def run_bench(
    options: BenchOptions,
    suts: list[SutChoice],
    progress: Progress = lambda done, total, line: None,
) -> list[dict]:
    """Every group is timed once per pass, and the passes go over the whole plan in turn, so a
    cell's samples come from moments spread over the run: a slow spell of a shared machine
    that lasts seconds covers one pass of a cell, never the majority of its samples, and the
    median stands. Each pass verifies its own last write."""
    timer = timer_for(options.device)
    groups = list(bench_groups(options))
    scenarios = [
        bench_scenario(pool, dtype, tokens, layers, options.seed)
        for _, pool, dtype, tokens, layers in groups
    ]
    gathered: dict[tuple[int, str], dict[str, TimedCell]] = {}  # (group, mode) -> label -> result
    copies: dict[tuple, list[Samples]] = {}  # (group, mode, family) -> samples
    try:
        _take_passes(options, suts, timer, groups, scenarios, gathered, copies, progress)
    except KeyboardInterrupt:
        # An interrupted family left nothing behind; every finished one was measured and verified.
        raise BenchInterrupted(
            _rows(gathered, copies, scenarios, options.seed, [sut.spec for sut in suts])
        ) from None
    return _rows(gathered, copies, scenarios, options.seed, [sut.spec for sut in suts])


def _cells_per_pass(options: BenchOptions, suts: list[SutChoice], groups: list[BenchGroup]) -> int:
    return sum(
        len(list(cells_for(backend.name, (mode,), backend.eras, suts, options)))
        for backend, *_ in groups
        for mode in backend.modes
    )


def _take_passes(
    options: BenchOptions,
    suts: list[SutChoice],
    timer,
    groups: list[BenchGroup],
    scenarios: list,
    gathered: dict,
    copies: dict,
    progress: Progress,
) -> None:
    total, done = options.passes * _cells_per_pass(options, suts, groups), 0
    for pass_number in range(1, options.passes + 1):
        for index, (backend, pool, dtype, tokens, layers) in enumerate(groups):
            scenario, nbytes = scenarios[index], bytes_moved(scenarios[index])
            for mode in backend.modes:
                # Again each pass: keeping every group's baseline buffers across passes would
                # hold gigabytes at 32768 tokens, and the baseline costs one untimed write.
                cells = list(cells_for(backend.name, (mode,), backend.eras, suts, options))
                baseline = Baseline(scenario, backend.name, mode, None, {c.era for c in cells})
                results = gathered.setdefault((index, mode), {})
                for family_key, family in _families(cells).items():
                    family_results, copy = measure_family(
                        family, scenario, baseline, options, timer
                    )
                    key = (index, mode, family_key)
                    copies[key] = join_samples(copies.get(key, []), copy)
                    for result in family_results:
                        label = result.cell.label
                        results[label] = (
                            _joined(results[label], result) if label in results else result
                        )
                        done += 1
                        progress(
                            done,
                            total,
                            f"pass {pass_number}/{options.passes} [{index + 1}/{len(groups)}] "
                            f"{pool} {dtype} {tokens}t {layers}l {label}: "
                            f"{_headline(result, nbytes)}",
                        )
                del baseline


def _rows(
    gathered: dict, copies: dict, scenarios: list[Scenario], seed: int, suts: list[str]
) -> list[dict]:
    rows: list[dict] = []
    for (index, mode), results in gathered.items():
        scenario = scenarios[index]
        for result in results.values():
            family_copy = copies[(index, mode, _family_of(result.cell))]
            copy_by_cache = {samples.cache: samples for samples in family_copy}
            for cache in result.samples or [None]:
                rows.append(
                    bench_row(
                        result,
                        cache,
                        scenario,
                        bytes_moved(scenario),
                        copy_by_cache,
                        results,
                        seed,
                        suts,
                    )
                )
    return rows


def _headline(result: TimedCell, nbytes: int) -> str:
    if not result.samples:
        return f"{result.verdict.outcome.upper()} {result.verdict.message}"
    stats = summarize(result.samples[0].ns)
    return (
        f"median {stats.median_ns / 1e3:.1f} us (cv {stats.cv:.2f}, mad_cv {stats.mad_cv:.2f}, "
        f"{len(result.samples[0].ns)} "
        f"samples), {nbytes / stats.median_ns:.2f} GB/s"
    )
