"""`kvh bench`: time verified writes over the bench matrix and write bench.parquet and bench.md."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import Iterator, Optional

import pandas as pd
import torch

from backends.registry import BACKENDS
from harness.bench.bench_loop import BenchInterrupted, run_bench
from harness.bench.bench_rows import KIND
from harness.bench.plan import QUICK, QUICK_BUDGET, TOKEN_COUNTS, BenchOptions, foreign_eras
from harness.bench.timers import TIMERS, timing_unavailable_reason
from harness.cli.arguments import (
    check_device_and_out,
    check_writable,
    choose,
    csv_list,
    positive_float,
    positive_int,
    seed_int,
)
from harness.cli.junit import write_junit
from harness.cli.progress import ProgressReporter
from harness.cli.suts import describe_sut
from harness.exit_codes import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, UsageError
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice, close_suts, resolve_suts
from harness.sut.load.loader import SutLoadError
from harness.sut.probe.detect import conventions
from pools.builtin.engines import ENGINES
from pools.builtin.eras import ERAS
from pools.dtypes import DTYPES
from reports.atomic import write_text_atomic
from reports.bench_agreement import agreement, agreement_markdown, previous_bench_rows
from reports.markdown import markdown_table
from reports.outcome import Outcome
from reports.records import records_frame
from reports.store import append, run_meta
from scenarios.model import POOL_KINDS


def _ints(value: str) -> list[int]:
    # Each a count positive_int takes (1 to COUNT_LIMIT): 2**70 tokens is no bench that ends.
    try:
        numbers = [positive_int(part) for part in value.split(",") if part]
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"in {value!r}: {error}") from None
    if not numbers:
        raise argparse.ArgumentTypeError(f"expected a comma list of whole numbers, got {value!r}")
    return numbers


# The matrix axes shared with `kvh run`; defaults differ (see BenchOptions and QUICK).
MATRIX = (
    ("backend", BACKENDS),
    ("pool", POOL_KINDS),
    ("dtype", DTYPES),
    ("era", ERAS),
    ("engine", ENGINES),
)

# A JUnit test case: one timed cell, whatever its cache states (they share its verdict).
JUNIT_CELL = ("pool", "dtype", "backend", "mode", "sut", "era", "engine", "tokens", "layers")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sut",
        action="append",
        help="builtin[:ENGINE], sglang, an installed release sglang==X or a range (each timed in "
        "its worker), a module or a .py file (repeatable; default builtin)",
    )
    for flag, known in MATRIX:
        parser.add_argument(f"--{flag}", type=csv_list, help=f"comma list of {', '.join(known)}")
    parser.add_argument(
        "--tokens",
        type=_ints,
        help=f"comma list of token counts (default {','.join(map(str, TOKEN_COUNTS))})",
    )
    parser.add_argument("--layers", type=_ints, help="comma list of layer counts (default 1)")
    parser.add_argument(
        "--device", default="cpu", help=f"torch device ({', '.join(TIMERS)}; default cpu)"
    )
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI smoke run: mha and swa_mha, bf16, "
        "legacy and current, torch engine, 1 and 4096 tokens, one thread",
    )
    parser.add_argument(
        "--cuda-graph",
        action="store_true",
        help="time the replay of a CUDA graph that holds each write (decode writes are "
        "launch-bound; FlashInfer's bench and tritonbench time so by default); CUDA only",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        help="torch intra-op threads (default: torch's own; 1 with --quick)",
    )
    parser.add_argument(
        "--min-time",
        type=positive_float,
        help="seconds of measured time per cell, at least, split evenly over the passes",
    )
    parser.add_argument(
        "--passes",
        type=positive_int,
        help="times the whole plan is timed, each cell's samples "
        "pooled over them (default 3; 5 with --quick)",
    )
    parser.add_argument(
        "--junit",
        type=Path,
        help="also write JUnit XML here: one test case per cell, "
        "a failure carrying the finding, an error its reason",
    )
    parser.add_argument("--out", type=Path, default=Path("kvh-out"))
    parser.set_defaults(handler=main)


def options_from(arguments: argparse.Namespace) -> BenchOptions:
    check_device_and_out(arguments.device, arguments.out)
    if arguments.junit is not None:
        check_writable(arguments.junit.parent, "--junit")
    base = BenchOptions(**QUICK, budget=QUICK_BUDGET) if arguments.quick else BenchOptions()
    budget, passes = base.budget, base.passes if arguments.passes is None else arguments.passes
    if passes < 1:
        raise UsageError("--passes must be >= 1")
    if arguments.min_time is not None:
        if arguments.min_time <= 0:
            raise UsageError("--min-time must be > 0")
        budget = dataclasses.replace(budget, min_time_s=arguments.min_time / passes)
    if arguments.threads is not None and arguments.threads < 1:
        raise UsageError("--threads must be >= 1")
    unavailable = arguments.cuda_graph and timing_unavailable_reason("cuda_graph", arguments.device)
    if unavailable:
        raise UsageError(f"--cuda-graph: {unavailable}")
    return dataclasses.replace(
        base,
        suts=arguments.sut or base.suts,
        backends=choose(arguments.backend or base.backends, BACKENDS, "backend"),
        pools=choose(arguments.pool or base.pools, POOL_KINDS, "pool"),
        dtypes=choose(arguments.dtype or base.dtypes, DTYPES, "dtype"),
        eras=choose(arguments.era or base.eras, ERAS, "era"),
        eras_named=arguments.era is not None,
        cuda_graph=arguments.cuda_graph,
        engines=choose(arguments.engine or base.engines, ENGINES, "engine"),
        tokens=arguments.tokens or base.tokens,
        layers=arguments.layers or base.layers,
        device=arguments.device,
        seed=arguments.seed,
        budget=budget,
        out=arguments.out,
        threads=arguments.threads or base.threads,
        passes=passes,
    )


@contextlib.contextmanager
def torch_threads(threads: Optional[int]) -> Iterator[None]:
    """torch's intra-op thread count for the run, restored afterwards (None: left as it is)."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _fmt(value, spec: str) -> str:
    return "" if value is None or value != value else format(value, spec)


def _interval(row: dict, ratio: str, low: str, high: str) -> str:
    """`ratio [low, high]` from the row's columns of those names ("" where it has no ratio)."""
    if not row.get(ratio):
        return ""
    return f"{_fmt(row[ratio], '.3f')} [{_fmt(row.get(low), '.3f')}, {_fmt(row.get(high), '.3f')}]"


def _code(timed_code) -> str:
    """`release` where the timed call ran the release's backend class, else `model`."""
    if not timed_code:
        return ""
    return "model" if timed_code == "call-site model" else "release"


def _sut_ratio(row: dict) -> str:
    interval = _interval(row, "sut_ratio", "sut_ratio_ci_low", "sut_ratio_ci_high")
    return f"{interval} vs {row['sut_baseline']}" if interval else ""


def _table_row(r: dict) -> dict:
    spread = (
        f"{_fmt(r['p10_ns'] / 1e3, '.1f')}-{_fmt(r['p90_ns'] / 1e3, '.1f')}"
        if r.get("p10_ns") is not None
        else ""
    )
    return {
        "pool": r["pool"],
        "dtype": r["dtype"],
        "tokens": r["tokens"],
        "layers": r["layers"],
        "backend": f"{r['backend']}:{r['mode']}",
        "sut/era/engine": f"{r['sut']}/{r['era']}/{r['engine']}",
        "cache": r.get("cache") or "",
        "median us": _fmt(r["median_ns"] / 1e3 if r.get("median_ns") else None, ".1f"),
        "p10-p90 us": spread,
        "cv": _fmt(r.get("cv"), ".3f"),
        "mad_cv": _fmt(r.get("mad_cv"), ".3f"),
        "GB/s": _fmt(r.get("gbps"), ".2f"),
        "roofline": _fmt(r.get("roofline_fraction"), ".2f"),
        "new/old [95% CI]": _interval(
            r, "api_overhead_ratio", "api_overhead_ci_low", "api_overhead_ci_high"
        ),
        "code": _code(r.get("timed_code")),
        "call us": _fmt(r.get("call_us"), ".1f"),
        "/first SUT [95% CI]": _sut_ratio(r),
        "outcome": r["outcome"] + (f": {r['error']}" if r.get("error") else ""),
    }


def markdown(rows: list[dict]) -> str:
    return (
        markdown_table(pd.DataFrame([_table_row(row) for row in rows]), empty="(no cells)") + "\n"
    )


def main(arguments: argparse.Namespace) -> int:
    options = options_from(arguments)
    try:
        # A user's module is timed here (kvh run walls it off in a worker); a release, which
        # cannot share a process with another, is timed in its worker, turn by turn.
        suts = resolve_suts(RunOptions(suts=options.suts, engines=options.engines, in_process=True))
    except (SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    try:
        return _bench(arguments, options, suts)
    finally:
        close_suts(suts)


def _say_conventions(options: BenchOptions, suts: list[SutChoice]) -> None:
    """Which named --era a foreign SUT is not timed through, and why: it does not offer it."""
    for sut in suts:
        if sut.loaded is None or not options.eras_named:
            continue
        lacked = [era for era in options.eras if era not in foreign_eras(sut, options)]
        offered = conventions(sut.loaded.capabilities, sut.loaded.era)
        if lacked:
            print(
                f"kvh bench: {sut.spec}: not timed through {', '.join(lacked)}: "
                f"its capabilities offer {', '.join(offered) or 'none'}",
                file=sys.stderr,
            )


def _bench(arguments: argparse.Namespace, options: BenchOptions, suts: list[SutChoice]) -> int:
    for sut in suts:
        for line in describe_sut(sut):
            print(f"kvh: {line}", file=sys.stderr)
    _say_conventions(options, suts)
    meta = run_meta(options.device, options.seed, "bench")
    # Each row carries its own SUT's version: a run's one value would stamp every release "".
    del meta["sut_version"]
    print(
        f"kvh bench: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        file=sys.stderr,
    )
    interrupted = False
    with torch_threads(options.threads):
        try:
            with ProgressReporter("kvh bench", unit="cell") as progress:
                rows = run_bench(options, suts, progress)
        except BenchInterrupted as stop:
            if not stop.rows:
                raise
            rows, interrupted = stop.rows, True
            print(
                "kvh bench: interrupted; writing the cells measured and verified so far "
                "(column passes says how many passes each has)",
                file=sys.stderr,
            )
    previous = previous_bench_rows(options.out)
    frame = records_frame(KIND, rows)
    path = append(options.out, frame, KIND, meta)
    table = markdown(rows)
    agreed = agreement(previous, frame)
    if len(agreed):
        table += "\n" + agreement_markdown(agreed, str(previous["run_id"].iloc[0]))
    write_text_atomic(options.out / "bench.md", table)
    if arguments.junit is not None:
        write_junit(arguments.junit, frame, "bench", JUNIT_CELL)
    print(table)
    findings = sum(1 for row in rows if row["outcome"] == Outcome.FINDING)
    measured = sum(1 for row in rows if row["outcome"] == Outcome.MEASURED)
    print(
        f"{'FAIL' if findings else 'DONE'}: {measured} measured, {findings} findings, "
        f"{len(rows) - measured - findings} errors; results: {path}, "
        f"table: {options.out / 'bench.md'}"
        + (f", junit: {arguments.junit}" if arguments.junit is not None else "")
    )
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FINDINGS if findings else EXIT_OK
