"""`kvh run`: validate every input first, then run, stream progress, and write the results."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import pandas as pd

from backends.registry import BACKENDS
from harness.cli.options import check_device_and_out, choose, csv_list
from harness.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.plan import RunOptions, close_suts, resolve_suts
from harness.repro import save_repro
from harness.sharding import parse_shard
from harness.exploration_log import ExplorationLog
from harness.runner import CellResult, Exploring, explore_run, run
from pools.dtypes import DTYPES
from pools.engines import ENGINES
from pools.eras import ERAS
from harness.sut.loader import SutLoadError
from reports.atomic import write_text_atomic
from reports.store import append, run_meta
from reports.summary import markdown_table, summary_markdown, summary_table, verdict
from scenarios.model import POOL_KINDS
from scenarios.profiles import PROFILE_ENV, PROFILES, chosen_profile, database_dir
from scenarios.serialize import ScenarioError, from_dict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sut", action="append", help="builtin[:ENGINE], sglang, a module or a .py file "
                        "(repeatable; default builtin)")
    parser.add_argument("--pool", type=csv_list, help=f"comma list of {', '.join(POOL_KINDS)}")
    parser.add_argument("--dtype", type=csv_list, help=f"comma list of {', '.join(DTYPES)}")
    parser.add_argument("--era", type=csv_list, help=f"comma list of {', '.join(ERAS)}")
    parser.add_argument("--engine", type=csv_list, help=f"comma list of {', '.join(ENGINES)}")
    parser.add_argument("--backend", type=csv_list, help=f"comma list of {', '.join(BACKENDS)}")
    parser.add_argument("--device", help="torch device for candidates (default: each backend's "
                        "natural device when present here, else cpu)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=0,
                        help="extra random scenarios per pool and dtype (default 0); with --profile, "
                        "Hypothesis examples per cell instead of the profile's count")
    parser.add_argument("--profile", help=f"explore with Hypothesis: {', '.join(PROFILES)} "
                        f"(default ${PROFILE_ENV}; unset: the builtin deterministic set)")
    parser.add_argument("--special-values", action="store_true",
                        help="with --profile, also draw ±0, subnormals, ±inf and NaN")
    parser.add_argument("--scenario", type=Path, action="append",
                        help="a scenario JSON file to run instead of the builtin set (repeatable)")
    parser.add_argument("--shard", help="i/N: run only this deterministic share of the cells "
                        "(docs/distributed.md)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per SUT scenario")
    parser.add_argument("--out", type=Path, default=Path("kvh-out"))
    parser.set_defaults(handler=main)


def options_from(arguments: argparse.Namespace) -> RunOptions:
    if arguments.examples < 0:
        raise UsageError("--examples must be >= 0")
    check_device_and_out(arguments.device, arguments.out)
    try:
        shard = None if arguments.shard is None else parse_shard(arguments.shard)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return RunOptions(shard=shard,
        scenarios=[_load_scenario(path) for path in arguments.scenario] if arguments.scenario else None,
        suts=arguments.sut or ["builtin"],
        pools=choose(arguments.pool, POOL_KINDS, "pool"),
        dtypes=choose(arguments.dtype, DTYPES, "dtype"),
        eras=choose(arguments.era, ERAS, "era"),
        engines=choose(arguments.engine, ENGINES, "engine"), engines_named=arguments.engine is not None,
        backends=choose(arguments.backend, BACKENDS, "backend"),
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


def record_of(result: CellResult) -> dict:
    """One `check` row of the results store (reports/schema.py); run metadata is stamped later."""
    g = result.scenario.geometry
    source = result.candidate or result.skip
    detail = (result.findings[0].headline() if result.findings
              else result.skip.reason if result.skip else "")
    return {"sut": source.sut, "device": result.candidate.device if result.candidate else "", "backend": result.candidate.backend if result.candidate else "",
            "mode": result.candidate.mode if result.candidate else "", "pool": g.pool,
            "era": source.era, "engine": source.engine, "dtype": g.dtype,
            "scenario": result.scenario.name,
            "tokens": sum(f.tokens for f in result.scenario.forwards), "outcome": result.outcome,
            "findings": len(result.findings),
            "divergence": result.divergence.name if result.divergence else "",
            "divergence_pr": result.divergence.pr if result.divergence else "",
            "write_ns": result.write_ns, "bytes_moved": None, "detail": detail, "repro": None}


def exploring_from(arguments: argparse.Namespace, environ: dict) -> Optional[Exploring]:
    try:
        profile = chosen_profile(arguments.profile, environ)
    except ValueError as error:
        raise UsageError(f"{error} (from --profile or ${PROFILE_ENV})") from None
    if profile is None:
        if arguments.special_values:
            raise UsageError("--special-values needs --profile")
        return None
    if arguments.scenario:
        raise UsageError("--scenario runs the given scenarios; it does not combine with --profile")
    return Exploring(profile, arguments.examples or None, arguments.special_values,
                     database_dir(environ))


def main(arguments: argparse.Namespace) -> int:
    options = options_from(arguments)
    exploring = exploring_from(arguments, dict(os.environ))
    try:
        suts = resolve_suts(options)
    except (SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    for sut in suts:
        if sut.loaded is not None:
            print(f"kvh: SUT {sut.spec}: detected era {sut.loaded.era}"
                  + (f" (version {sut.loaded.version})" if sut.loaded.version else ""), file=sys.stderr)
    meta = run_meta(options.device or "natural", options.seed,
                    exploring.profile.name if exploring else "default",
                    ", ".join(f"{s.spec}={s.loaded.version}" for s in suts if s.loaded and s.loaded.version))
    rows, finding_lines, divergences, skips = [], [], {}, {}
    started = time.monotonic()

    def on_result(result: CellResult) -> None:
        row = record_of(result)
        rows.append(row)
        if result.outcome == "findings":
            path = save_repro(options.out / "repros", result)
            row["repro"] = str(path.relative_to(options.out))
            finding_lines.append(f"{result.label} `{result.scenario.name}`: "
                                 f"{result.findings[0].headline()} (repro: {path})"
                                 + (f" {result.reproduce}" if result.reproduce else ""))
        elif result.outcome == "known_divergence":
            d = result.divergence
            divergences[(d.name, result.candidate.era)] = f"{d.name} ({d.pr}) in era {result.candidate.era}: {d.reason}"
        elif result.outcome == "skipped":
            skips[result.label] = f"{result.label}: {result.skip.reason}"

    def on_group(group: str, done: int, total: int) -> None:
        failed = sum(1 for row in rows if row["outcome"] == "findings")
        print(f"kvh: [{done}/{total}] {group} done: {len(rows)} checks so far, {failed} with "
              f"findings, {time.monotonic() - started:.1f}s", file=sys.stderr)

    log = None
    try:
        if exploring is None:
            run(options, suts, on_result, on_group)
        else:
            log = ExplorationLog(exploring.profile.name, options.seed)
            explore_run(options, suts, exploring, on_result, log.add)
    finally:
        close_suts(suts)
    frame = pd.DataFrame(rows)
    results = append(options.out, frame, "check", meta)
    summary = summary_markdown(frame, meta, finding_lines, list(divergences.values()), list(skips.values()))
    if log is not None:
        summary += "\n" + log.markdown()
    write_text_atomic(options.out / "summary.md", summary)
    print(markdown_table(summary_table(frame)))
    for line in finding_lines[:20]:
        print(f"FINDING {line}")
    if len(finding_lines) > 20:
        print(f"... and {len(finding_lines) - 20} more findings, see {options.out / 'summary.md'}")
    if log is not None:
        print(log.markdown())
    print(verdict(frame))
    print(f"results: {results}, summary: {options.out / 'summary.md'}")
    return EXIT_FINDINGS if finding_lines else EXIT_OK
