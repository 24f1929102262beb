"""`kvh run`: validate every input first, then run, stream progress, and write the results."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from backends.registry import BACKENDS
from harness.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.devices import unavailable_reason
from harness.plan import RunOptions, resolve_suts
from harness.repro import save_repro
from harness.runner import CellResult, run
from pools.dtypes import DTYPES
from pools.engines import ENGINES
from pools.eras import ERAS
from pools.sut.loader import SutLoadError
from reports.atomic import write_text_atomic
from reports.records import run_metadata, write_records
from reports.summary import markdown_table, summary_markdown, summary_table, verdict
from scenarios.model import POOL_KINDS
from scenarios.serialize import ScenarioError, from_dict


def _csv(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sut", action="append", help="builtin[:ENGINE], sglang, a module or a .py file "
                        "(repeatable; default builtin)")
    parser.add_argument("--pool", type=_csv, help=f"comma list of {', '.join(POOL_KINDS)}")
    parser.add_argument("--dtype", type=_csv, help=f"comma list of {', '.join(DTYPES)}")
    parser.add_argument("--era", type=_csv, help=f"comma list of {', '.join(ERAS)}")
    parser.add_argument("--engine", type=_csv, help=f"comma list of {', '.join(ENGINES)}")
    parser.add_argument("--backend", type=_csv, help=f"comma list of {', '.join(BACKENDS)}")
    parser.add_argument("--device", default="cpu", help="torch device for candidates (default cpu)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=0,
                        help="extra random scenarios per pool and dtype (default 0)")
    parser.add_argument("--scenario", type=Path, action="append",
                        help="a scenario JSON file to run instead of the builtin set (repeatable)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per SUT scenario")
    parser.add_argument("--out", type=Path, default=Path("kvh-out"))
    parser.set_defaults(handler=main)


def _choose(values, known, what: str) -> list[str]:
    if values is None:
        return list(known)
    unknown = [value for value in values if value not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}; choose from {', '.join(known)}")
    if not values:
        raise UsageError(f"--{what} needs at least one value")
    return values


def options_from(arguments: argparse.Namespace) -> RunOptions:
    if arguments.examples < 0:
        raise UsageError("--examples must be >= 0")
    try:
        reason = unavailable_reason(arguments.device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if reason:
        raise UsageError(f"device {arguments.device} is not available here: {reason}")
    if arguments.out.exists() and not arguments.out.is_dir():
        raise UsageError(f"--out {arguments.out} exists and is not a folder")
    return RunOptions(
        scenarios=[_load_scenario(path) for path in arguments.scenario] if arguments.scenario else None,
        suts=arguments.sut or ["builtin"],
        pools=_choose(arguments.pool, POOL_KINDS, "pool"),
        dtypes=_choose(arguments.dtype, DTYPES, "dtype"),
        eras=_choose(arguments.era, ERAS, "era"),
        engines=_choose(arguments.engine, ENGINES, "engine"),
        backends=_choose(arguments.backend, BACKENDS, "backend"),
        device=arguments.device, seed=arguments.seed, examples=arguments.examples,
        out=arguments.out, timeout_s=arguments.timeout)


def _load_scenario(path: Path):
    try:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(f"scenario file {path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"scenario file {path} is not valid JSON ({error})") from None
    except ScenarioError as error:
        raise UsageError(f"scenario file {path}: {error}") from None


def record_of(result: CellResult, meta: dict) -> dict:
    g = result.scenario.geometry
    source = result.candidate or result.skip
    return {**meta, "sut": source.sut, "backend": result.candidate.backend if result.candidate else "",
            "mode": result.candidate.mode if result.candidate else "", "pool": g.pool,
            "era": source.era, "engine": source.engine, "dtype": g.dtype,
            "scenario": result.scenario.name,
            "tokens": sum(f.tokens for f in result.scenario.forwards), "outcome": result.outcome,
            "findings": len(result.findings),
            "divergence": result.divergence.name if result.divergence else "",
            "divergence_pr": result.divergence.pr if result.divergence else "",
            "write_ns": result.write_ns, "bytes_moved": None}


def main(arguments: argparse.Namespace) -> int:
    options = options_from(arguments)
    try:
        suts = resolve_suts(options)
    except (SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    for sut in suts:
        if sut.loaded is not None:
            print(f"kvh: SUT {sut.spec}: detected era {sut.loaded.era}"
                  + (f" (version {sut.loaded.version})" if sut.loaded.version else ""), file=sys.stderr)
    meta = run_metadata(options.device, options.seed)
    rows, finding_lines, divergences, skips = [], [], {}, {}
    started = time.monotonic()

    def on_result(result: CellResult) -> None:
        rows.append(record_of(result, meta))
        if result.outcome == "findings":
            path = save_repro(options.out / "repros", result)
            finding_lines.append(f"{result.label} `{result.scenario.name}`: "
                                 f"{result.findings[0].headline()} (repro: {path})")
        elif result.outcome == "known_divergence":
            d = result.divergence
            divergences[(d.name, result.candidate.era)] = f"{d.name} ({d.pr}) in era {result.candidate.era}: {d.reason}"
        elif result.outcome == "skipped":
            skips[result.label] = f"{result.label}: {result.skip.reason}"

    def on_group(group: str, done: int, total: int) -> None:
        failed = sum(1 for row in rows if row["outcome"] == "findings")
        print(f"kvh: [{done}/{total}] {group} done: {len(rows)} checks so far, {failed} with "
              f"findings, {time.monotonic() - started:.1f}s", file=sys.stderr)

    run(options, suts, on_result, on_group)
    frame = pd.DataFrame(rows)
    write_records(options.out / "results.parquet", rows)
    summary = summary_markdown(frame, meta, finding_lines, list(divergences.values()), list(skips.values()))
    write_text_atomic(options.out / "summary.md", summary)
    print(markdown_table(summary_table(frame)))
    for line in finding_lines[:20]:
        print(f"FINDING {line}")
    if len(finding_lines) > 20:
        print(f"... and {len(finding_lines) - 20} more findings, see {options.out / 'summary.md'}")
    print(verdict(frame))
    print(f"results: {options.out / 'results.parquet'}, summary: {options.out / 'summary.md'}")
    return EXIT_FINDINGS if finding_lines else EXIT_OK
