"""`kvh run`: validate every input first, then run, stream progress, and write the results."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional

from backends.registry import BACKENDS
from harness.cli.arguments import (
    check_device_and_out,
    check_writable,
    choose,
    csv_list,
    positive_float,
    positive_int,
)
from harness.cli.jobs import PARENT_ONLY, options_argv, run_jobs
from harness.cli.junit import RUN_CELL, write_junit
from harness.cli.progress import ProgressReporter
from harness.cli.suts import describe_sut, sut_record
from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    HeldSignals,
    StopSignals,
    UsageError,
    interrupted_exit_code,
    signal_of,
)
from harness.plan.run_options import RunOptions
from harness.plan.sharding import parse_shard
from harness.plan.sut_choice import SutChoice, close_suts, resolve_suts
from harness.report.cell_result import ERA_TABLE_SUT, CellResult
from harness.report.check_record import record_of
from harness.report.coverage import Coverage
from harness.report.exploration_log import ExplorationLog
from harness.report.repro_files import save_repro
from harness.report.run_summary import StoredRun, run_summary
from harness.run.cells import cell_groups, planned_cells
from harness.run.deterministic import planned_checks, run
from harness.run.exploring import Exploring, explore_run
from harness.sut.load.loader import SutLoadError
from pools.dtypes import DTYPES
from pools.engines import ENGINES
from pools.eras import ERAS
from reports.atomic import write_text_atomic
from reports.outcome import Outcome
from reports.records import records_frame
from reports.store import append, run_meta
from reports.summary import Interruption, counts_line
from scenarios.model import POOL_KINDS
from scenarios.profiles import PROFILE_ENV, PROFILES, chosen_profile, database_dir
from scenarios.serialize import ScenarioError, from_dict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sut",
        action="append",
        help="builtin[:ENGINE]; sglang (the installed one); sglang==X (a release installed by "
        "kvh sut install, run in its own process); sglang@DIR (a folder holding an sglang "
        "package); a module or a .py file with SGLang's names (repeatable; default builtin)",
    )
    parser.add_argument("--pool", type=csv_list, help=f"comma list of {', '.join(POOL_KINDS)}")
    parser.add_argument("--dtype", type=csv_list, help=f"comma list of {', '.join(DTYPES)}")
    parser.add_argument(
        "--era",
        type=csv_list,
        help=f"comma list of {', '.join(ERAS)}: the builtin eras to run; with a foreign SUT, "
        "the call conventions to drive it through instead of the one its capabilities probe as",
    )
    parser.add_argument("--engine", type=csv_list, help=f"comma list of {', '.join(ENGINES)}")
    parser.add_argument("--backend", type=csv_list, help=f"comma list of {', '.join(BACKENDS)}")
    parser.add_argument(
        "--device",
        help="torch device for candidates (default: each backend's "
        "natural device when present here, else cpu)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--examples",
        type=int,
        default=0,
        help="extra random scenarios per pool and dtype (default 0); with --profile, "
        "Hypothesis examples per cell instead of the profile's count",
    )
    parser.add_argument(
        "--profile",
        help=f"explore with Hypothesis: {', '.join(PROFILES)} "
        f"(default ${PROFILE_ENV}; unset: the builtin deterministic set)",
    )
    parser.add_argument(
        "--special-values",
        action="store_true",
        help="with --profile, also draw ±0, subnormals, ±inf and NaN",
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        action="append",
        help="a scenario JSON file to run instead of the builtin set (repeatable)",
    )
    parser.add_argument(
        "--shard", help="i/N: run only this deterministic share of the cells (docs/distributed.md)"
    )
    parser.add_argument(
        "--timeout", type=positive_float, default=30.0, help="seconds per SUT scenario (> 0)"
    )
    parser.add_argument(
        "--junit",
        type=Path,
        help="also write JUnit XML here: one test case per "
        "cell and candidate, a failure carrying the finding and its kvh repro",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="spread the cells over N child processes, each a shard of its own, then merge "
        f"(default 1; this machine has {os.cpu_count() or 1} cores)",
    )
    parser.add_argument("--out", type=Path, default=Path("kvh-out"))
    parser.set_defaults(handler=main)


def options_from(arguments: argparse.Namespace) -> RunOptions:
    if arguments.examples < 0:
        raise UsageError("--examples must be >= 0")
    check_device_and_out(arguments.device, arguments.out)
    if arguments.junit is not None:
        check_writable(arguments.junit.parent, "--junit")
    try:
        shard = None if arguments.shard is None else parse_shard(arguments.shard)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return RunOptions(
        shard=shard,
        scenarios=[_load_scenario(path) for path in arguments.scenario]
        if arguments.scenario
        else None,
        suts=arguments.sut or ["builtin"],
        pools=choose(arguments.pool, POOL_KINDS, "pool"),
        dtypes=choose(arguments.dtype, DTYPES, "dtype"),
        eras=choose(arguments.era, ERAS, "era"),
        eras_named=arguments.era is not None,
        engines=choose(arguments.engine, ENGINES, "engine"),
        engines_named=arguments.engine is not None,
        backends=choose(arguments.backend, BACKENDS, "backend"),
        device=arguments.device,
        seed=arguments.seed,
        examples=arguments.examples,
        out=arguments.out,
        timeout_s=arguments.timeout,
    )


def _load_scenario(path: Path):
    try:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(f"scenario file {path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"scenario file {path} is not valid JSON ({error})") from None
    except ScenarioError as error:
        raise UsageError(f"scenario file {path}: {error}") from None


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
    return Exploring(
        profile, arguments.examples or None, arguments.special_values, database_dir(environ)
    )


def main(arguments: argparse.Namespace) -> int:
    options = options_from(arguments)
    exploring = exploring_from(arguments, dict(os.environ))
    # SIGTERM (a CI timeout) takes Ctrl-C's path for as long as the verb runs, the final writes
    # included: a second signal there still ends in an atomic write's clean-up, never half a file.
    with StopSignals() as stop:
        if arguments.jobs > 1:
            return run_jobs(
                options,
                arguments.jobs,
                child_options(arguments),
                arguments.junit,
                exploring.profile.name if exploring else None,
            )
        return _run(arguments, options, exploring, stop)


def child_options(arguments: argparse.Namespace) -> list[str]:
    """The options a --jobs child runs with: every one the user gave but the parent's own,
    written back from this verb's own option table."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return options_argv(arguments, parser, PARENT_ONLY)


def _group_names(options: RunOptions) -> list[str]:
    """The (pool, dtype) groups of a deterministic run in its order, as on_group names them."""
    return [f"{pool} {dtype}" for pool, dtype in cell_groups(options)]


def _interruption(
    stop: KeyboardInterrupt,
    options: RunOptions,
    suts: list,
    exploring: Optional[Exploring],
    finished: list[str],
) -> Interruption:
    """What an interrupted run did not finish: its (pool, dtype) groups, or for an exploring run
    its cells (pool/dtype/backend:mode), with the planned checks where the run knows them."""
    if exploring is None:
        try:
            planned: Optional[int] = planned_checks(options, suts)
        except Exception:  # the count is a nicety: never lose the finished checks over it
            planned = None
        every, unit = _group_names(options), "groups"
    else:
        planned, unit = None, "cells"
        every = [cell.key for cell in planned_cells(options)]
    done = set(finished)
    unfinished = tuple(name for name in every if name not in done)
    return Interruption(
        signal_of(stop), len(every) - len(unfinished), len(every), unit, unfinished, planned
    )


def _store(
    out: Path,
    meta: dict,
    rows: list[dict],
    coverage: Coverage,
    log: Optional[ExplorationLog],
    suts: list[SutChoice],
) -> tuple[StoredRun, Path]:
    """Append the run's records to the store at `out`: what its summary reads of them, and the
    check file's path."""
    checks = records_frame("check", rows)
    results_path = append(out, checks, "check", meta)
    covered = records_frame("coverage", coverage.rows())
    append(out, covered, "coverage", meta)
    explored = None if log is None else records_frame("exploration", log.rows())
    if explored is not None and len(explored):
        append(out, explored, "exploration", meta)
    not_run = [{"sut": sut.spec, "reason": sut.load_error} for sut in suts if sut.load_error]
    if not_run:
        append(out, records_frame("not-run", not_run), "not-run", meta)
    loaded = [record for record in map(sut_record, suts) if record is not None]
    if loaded:
        append(out, records_frame("sut", loaded), "sut", meta)
    stored = StoredRun(
        meta,
        checks.assign(source=str(results_path)),
        covered,
        explored,
        tuple(row["reason"] for row in not_run),
        tuple(loaded),
    )
    return stored, results_path


def _run(
    arguments: argparse.Namespace,
    options: RunOptions,
    exploring: Optional[Exploring],
    stop_signals: StopSignals,
) -> int:
    try:
        suts = resolve_suts(options)
    except (SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    for sut in suts:
        for line in describe_sut(sut):
            print(f"kvh: {line}", file=sys.stderr)
    not_loaded = [sut for sut in suts if sut.load_error]
    meta = run_meta(
        options.device or "natural",
        options.seed,
        exploring.profile.name if exploring else "default",
        ", ".join(f"{s.spec}={s.loaded.version}" for s in suts if s.loaded and s.loaded.version),
    )
    rows: list[dict] = []  # every check row in the order checked, era-table rows included
    progress = ProgressReporter("kvh", unit="group")

    coverage = Coverage()

    def on_result(result: CellResult) -> None:
        # The repro first and the row last, so that a run interrupted in here keeps a check
        # with its repro, or not at all.
        row = record_of(result)
        if result.outcome is Outcome.FINDING:
            path = save_repro(options.out / "repros", result)
            row["repro"] = str(path.relative_to(options.out))
        subject = result.subject
        if (
            result.scenario is not None
            and subject is not None
            and result.outcome not in (Outcome.SKIPPED, Outcome.UNEXPLORED)
        ):
            coverage.add(
                (result.pool, result.dtype, subject.backend, subject.mode), result.scenario
            )
        rows.append(row)
        # Every check comes through here: a signal whose first raise Python lost stops the run.
        stop_signals.raise_if_stopped()

    finished: list[str] = []  # the groups (or, exploring, the cells) that ran to their end

    def on_group(group: str, done: int, total: int) -> None:
        finished.append(group)
        checked = (row["outcome"] for row in rows if row["sut"] != ERA_TABLE_SUT)
        progress(done, total, f"[{done}/{total}] {group} done: {counts_line(checked)} so far")

    log = None
    stop: Optional[KeyboardInterrupt] = None
    # From the end of the cells on, a signal waits until everything is written: a run whose
    # cells were done when it came still writes whole results (its summary says what ran).
    held, ended = HeldSignals(), False
    try:
        if exploring is None:
            run(options, suts, on_result, on_group)
        else:
            log = ExplorationLog(options.seed)
            explore_run(options, suts, exploring, on_result, log.add)
        ended = True
    except KeyboardInterrupt as signalled:  # SIGINT or SIGTERM, by StopSignals
        stop, ended = signalled, True
    finally:
        held.hold()
        try:
            progress.close()
            close_suts(suts)
        finally:
            if not ended:  # an error of the harness: it propagates, with the signals back
                held.release()
    try:
        interrupted: Optional[Interruption] = None
        if stop is not None:
            finished += [stats.cell.key for stats in log.cells] if log is not None else []
            interrupted = _interruption(stop, options, suts, exploring, finished)
            checked = sum(row["sut"] != ERA_TABLE_SUT for row in rows)
            print(
                f"kvh: {'terminated' if interrupted.signal == 'SIGTERM' else 'interrupted'} "
                f"({interrupted.signal}) after {interrupted.done} of {interrupted.total} "
                f"{interrupted.unit}; writing the {checked} checks that finished",
                file=sys.stderr,
            )
        stored, results_path = _store(options.out, meta, rows, coverage, log, suts)
        summary_path = options.out / "summary.md"
        summary = run_summary(stored, options.backend_table, summary_path, interrupted)
        write_text_atomic(summary_path, summary.markdown)
        if arguments.junit is not None:
            write_junit(arguments.junit, stored.checks, "run", RUN_CELL)
        for line in summary.stdout:
            print(line)
        print(
            f"results: {results_path}, summary: {summary_path}"
            + (f", junit: {arguments.junit}" if arguments.junit is not None else "")
        )
        if stop is not None:
            return interrupted_exit_code(stop)
        if summary.findings:
            return EXIT_FINDINGS
        return EXIT_USAGE if not_loaded else EXIT_OK
    finally:
        held.release()
