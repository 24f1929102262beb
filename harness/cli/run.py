"""`kvh run`: validate every input first, then run, stream progress, and write the results."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness.cli.arguments import (
    LazyHelp,
    count_int,
    csv_list,
    positive_float,
    positive_int,
    seed_int,
)
from harness.exit_codes import UsageError

# What a run needs (torch, pandas, Hypothesis, the SGLang loader) is imported where the run
# starts, not here: a usage error such as `kvh run --pool nope` costs well under a second of CPU.
if TYPE_CHECKING:
    from harness.exit_codes import StopSignals
    from harness.plan.run_options import RunOptions
    from harness.run.exploring import Exploring
    from reports.summary import Interruption


def _names(module: str, registry: str) -> str:
    import importlib

    return ", ".join(getattr(importlib.import_module(module), registry))


def _profile_help() -> str:
    from scenarios.profiles import PROFILE_ENV, PROFILES

    return (
        f"explore with Hypothesis: {', '.join(PROFILES)} "
        f"(default ${PROFILE_ENV}; unset: the builtin deterministic set)"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sut",
        action="append",
        help="builtin[:ENGINE]; sglang (the installed one); sglang==X (a release installed by "
        "kvh sut install, run in its own process); sglang@DIR (a folder holding an sglang "
        "package); sglang@git:PATH#REV (a commit of a local SGLang checkout); a module or a "
        ".py file with SGLang's names (repeatable; default builtin)",
    )
    parser.add_argument(
        "--pool",
        type=csv_list,
        help=LazyHelp(lambda: f"comma list of {_names('scenarios.model', 'POOL_KINDS')}"),
    )
    parser.add_argument(
        "--dtype",
        type=csv_list,
        help=LazyHelp(lambda: f"comma list of {_names('pools.dtypes', 'DTYPES')}"),
    )
    parser.add_argument(
        "--era",
        type=csv_list,
        help=LazyHelp(
            lambda: (
                f"comma list of {_names('pools.builtin.eras', 'ERAS')}: the builtin eras to run; "
                "with a foreign SUT, the call conventions to drive it through instead of the one "
                "its capabilities probe as"
            )
        ),
    )
    parser.add_argument(
        "--engine",
        type=csv_list,
        help=LazyHelp(lambda: f"comma list of {_names('pools.builtin.engines', 'ENGINES')}"),
    )
    parser.add_argument(
        "--backend",
        type=csv_list,
        help=LazyHelp(lambda: f"comma list of {_names('backends.registry', 'BACKENDS')}"),
    )
    parser.add_argument(
        "--device",
        help="torch device for candidates (default: each backend's "
        "natural device when present here, else cpu)",
    )
    parser.add_argument("--seed", type=seed_int, default=0, help="0 <= SEED < 2**63 (default 0)")
    parser.add_argument(
        "--examples",
        type=count_int,
        default=0,
        help="extra random scenarios per pool and dtype (default 0); with --profile, "
        "Hypothesis examples per cell instead of the profile's count",
    )
    parser.add_argument(
        "--profile",
        help=LazyHelp(_profile_help),
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="with --profile, report each failing example as drawn instead of shrinking it "
        "(a mutation campaign's judges: a kill needs no minimal repro)",
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
        "--in-process",
        action="store_true",
        help="load a --sut module or .py file in kvh's own process, for a debugger; it gives up "
        "the worker's wall: the SUT's exit, crash, hang or KeyboardInterrupt then decides "
        "kvh's exit code instead of being a finding (releases always run in a worker)",
    )
    parser.add_argument(
        "--trail",
        action="store_true",
        help="record, for every check of a release, the release functions its writes run (the "
        "check rows' release_functions column; kvh mutants --renames selects cells by it); "
        "each such check is run once more under a trace",
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="measure which lines of the release's write path the run executes (coverage.py in "
        "its worker): per file and function in the summary and release-lines-RUN.json, the "
        "lines that cannot run on this machine said apart with their branch's test",
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


def main(arguments: argparse.Namespace) -> int:
    # A user's module or file SUT runs in a worker (docs/cli.md), started before this process's
    # own imports below, so that the two import torch at the same time. Stopped on the way out
    # (close_suts stops the ones the run used).
    from harness.cli.run_input import coverage_folder
    from harness.sut.load.environments import start_user_workers

    alone = arguments.jobs == 1 and not arguments.in_process
    coverage = coverage_folder(arguments)
    started = start_user_workers(arguments.sut or [], coverage, arguments.pool) if alone else {}
    try:
        return _main(arguments, started)
    finally:
        for worker in started.values():
            worker.stop()


def _main(arguments: argparse.Namespace, started: dict) -> int:
    from harness.cli.run_input import exploring_from, options_from
    from harness.exit_codes import StopSignals

    options = options_from(arguments)
    exploring = exploring_from(arguments, dict(os.environ))
    if options.coverage is not None:  # an earlier run's data is not this one's
        import shutil

        shutil.rmtree(options.coverage, ignore_errors=True)
    # SIGTERM (a CI timeout) takes Ctrl-C's path for as long as the verb runs, the final writes
    # included: a second signal there still ends in an atomic write's clean-up, never half a file.
    with StopSignals() as stop:
        if arguments.jobs > 1:
            from harness.cli.jobs import run_jobs

            return run_jobs(
                options,
                arguments.jobs,
                child_options(arguments),
                arguments.junit,
                exploring.profile.name if exploring else None,
            )
        return _run(arguments, options, exploring, stop, started)


def child_options(arguments: argparse.Namespace) -> list[str]:
    """The options a --jobs child runs with: every one the user gave but the parent's own,
    written back from this verb's own option table."""
    from harness.cli.jobs import PARENT_ONLY, options_argv

    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return options_argv(arguments, parser, PARENT_ONLY)


def _group_names(options: RunOptions) -> list[str]:
    """The (pool, dtype) groups of a deterministic run in its order, as on_group names them."""
    from harness.run.cells import cell_groups

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
    from harness.exit_codes import signal_of
    from harness.run.cells import planned_cells
    from harness.run.deterministic import planned_checks
    from reports.summary import Interruption

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


def _run(
    arguments: argparse.Namespace,
    options: RunOptions,
    exploring: Optional[Exploring],
    stop_signals: StopSignals,
    started: dict,
) -> int:
    from harness.cli.junit import RUN_CELL, write_junit
    from harness.cli.progress import ProgressReporter
    from harness.cli.run_store import store_run
    from harness.cli.suts import describe_sut
    from harness.exit_codes import (
        EXIT_FINDINGS,
        EXIT_OK,
        EXIT_USAGE,
        HeldSignals,
        interrupted_exit_code,
        unless_nothing_checked,
    )
    from harness.plan.sut_choice import close_suts, resolve_suts
    from harness.report.cell_result import ERA_TABLE_SUT, CellResult
    from harness.report.check_record import record_of
    from harness.report.coverage import Coverage
    from harness.report.exploration_log import ExplorationLog
    from harness.report.release_lines import write_release_lines
    from harness.report.repro_files import save_repro
    from harness.report.run_summary import run_summary
    from harness.report.summary_files import run_summary_path, write_run_summary
    from harness.run.deterministic import run
    from harness.run.exploring import explore_run
    from harness.sut.load.loader import SutLoadError
    from reports.outcome import Outcome
    from reports.store import run_meta
    from reports.summary import RunningCounts

    try:
        suts = resolve_suts(options, started)
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
    checked = RunningCounts()  # the candidates' checks so far (the era table's apart)

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
        if row["sut"] != ERA_TABLE_SUT:
            checked.add(row)
        # Every check comes through here: a signal whose first raise Python lost stops the run.
        stop_signals.raise_if_stopped()

    finished: list[str] = []  # the groups (or, exploring, the cells) that ran to their end

    def on_group(group: str, done: int, total: int) -> None:
        finished.append(group)
        progress(done, total, f"[{done}/{total}] {group} done: {checked.line()} so far")

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
        lines_path = lines_section = None
        door_lines: dict = {}
        if options.coverage is not None:  # the workers have saved what they measured
            roots = {s.spec: s.loaded.root for s in suts if s.loaded and s.loaded.root}
            lines_path, lines_section, door_lines = write_release_lines(
                options.out, meta["run_id"], options.coverage, roots
            )
        stored, results_path = store_run(options.out, meta, rows, coverage, log, suts, door_lines)
        # The run's own summary file (summary.md is a copy of the latest run's): two runs into
        # one --out each keep theirs, and this run's lines point at its own.
        summary_path = run_summary_path(options.out, meta["run_id"])
        summary = run_summary(stored, options.backend_table, summary_path, interrupted)
        markdown = summary.markdown
        if lines_path is not None:
            markdown += f"\n\n## Release lines run\n\n{lines_section}\n"
            print(f"kvh: release lines run: {lines_path}", file=sys.stderr)
        write_run_summary(options.out, meta["run_id"], markdown)
        if arguments.junit is not None:
            write_junit(arguments.junit, stored.checks, "run", RUN_CELL)
        for line in summary.stdout:
            print(line)
        from harness.run.release_source import RESULTS

        print(
            f"{RESULTS}{results_path}, summary: {summary_path}"
            + (f", junit: {arguments.junit}" if arguments.junit is not None else "")
        )
        if stop is not None:
            return interrupted_exit_code(stop)
        if summary.findings:
            return EXIT_FINDINGS
        return unless_nothing_checked(
            EXIT_USAGE if not_loaded else EXIT_OK,
            summary.nothing_checked,
            options.shard is not None,
        )
    finally:
        held.release()
