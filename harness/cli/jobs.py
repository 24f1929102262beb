"""`kvh run --jobs N`: the run's cells spread over N child `kvh run` processes, then one verdict.

Each child runs a shard of its own (harness/plan/sharding.py; within `--shard i/M`, job k runs shard
(i-1) + M(k-1) + 1 of M*N, which lies inside shard i) into OUT/jobs/job-K, with the same
options. A deterministic run checks the same cells and scenarios whatever N is; with
`--profile`, each child spends the profile's time on its own cells, so N jobs explore about N
times as many examples in the same wall time. Children's progress goes to stderr prefixed with
their job; the parent reads back the records they stored in this run (checks, era table,
coverage, exploration, SUTs not run), puts them in the order one run would have written them,
and writes the summary one run writes (harness/report/run_summary.py) with a section naming the
jobs, and JUnit XML, and exits with the worst child's code.

Interrupted (SIGINT or SIGTERM), the parent passes the signal on to each child once (the
children run in sessions of their own, so a Ctrl-C at the terminal reaches only the parent),
waits while each writes what it finished (harness/cli/run.py), merges those records into an
INTERRUPTED summary and exits 130 or 143.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Optional

from harness.cli.job_records import INTERRUPTED_CODES, Job, merged_run, stored_files
from harness.cli.junit import RUN_CELL, write_junit
from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    interrupted_exit_code,
    signal_of,
    unless_nothing_checked,
)
from harness.plan.run_options import RunOptions
from harness.plan.sharding import Shard
from harness.report.run_summary import StoredRun, run_summary
from harness.report.summary_files import run_summary_path, write_run_summary
from reports.summary import Interruption

# `kvh run` options the parent keeps for itself (by their dest); every other option the user
# gave is passed to each child.
PARENT_ONLY = ("jobs", "out", "shard", "junit")


def child_shard(shard: Optional[Shard], job: int, jobs: int) -> Shard:
    """Job `job` (1-based) of `jobs` within `shard` (None: the whole run)."""
    outer_index, outer_count = (shard.index, shard.count) if shard else (1, 1)
    return Shard(outer_index + outer_count * (job - 1), outer_count * jobs)


def options_argv(
    arguments: argparse.Namespace, parser: argparse.ArgumentParser, leave_out: Collection[str]
) -> list[str]:
    """The options of `arguments` as a command line `parser` reads back to the same values:
    each that differs from its default, by its long name, but those whose dest is in
    `leave_out`. Written from the parser's own table, so an option added to it travels too."""
    argv: list[str] = []
    # argparse has no public view of a parser's options; _actions is the table it parses with.
    for action in parser._actions:
        if not action.option_strings or action.dest in leave_out:
            continue
        value = getattr(arguments, action.dest, action.default)
        if value == action.default:
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # a flag (store_true): its presence is its value
            argv.append(flag)
        elif isinstance(action, argparse._AppendAction):  # repeated: once per value
            for item in value:
                argv += [flag, str(item)]
        elif isinstance(value, (list, tuple)):  # a comma list (harness/cli/arguments.csv_list)
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv


def child_arguments(child_options: Sequence[str], shard: Shard, out: Path) -> list[str]:
    """The `kvh run` command line of one child: the parent's options, its shard and folder."""
    return ["run", *child_options, "--shard", str(shard), "--out", str(out)]


def threads_per_job(jobs: int, cpu_count: Optional[int]) -> int:
    """Each of `jobs` processes' share of the cores, one at least."""
    return max(1, (cpu_count or 1) // jobs)


def _child_environment(jobs: int) -> dict[str, str]:
    """This environment, with torch's intra-op threads split between the jobs: N children each
    running as many threads as there are cores oversubscribe the machine (measured: --profile ci
    fell from 9.8 to 1.1-1.8 examples/s per job with 2 jobs of 2 threads on 2 cores)."""
    environment = dict(os.environ)
    environment.setdefault("OMP_NUM_THREADS", str(threads_per_job(jobs, os.cpu_count())))
    return environment


def _pump(stream, prefix: str) -> None:
    for line in stream:
        sys.stderr.write(f"{prefix}{line}")
    stream.close()


def _worst(codes: list[int]) -> int:
    """A child that died (a signal: a negative code) or failed inside is an internal error;
    then usage errors and interrupts; then findings."""
    if any(code < 0 or code == EXIT_INTERNAL for code in codes):
        return EXIT_INTERNAL
    others = sorted({code for code in codes if code not in (EXIT_OK, EXIT_FINDINGS)})
    if others:
        return others[0]
    return EXIT_FINDINGS if EXIT_FINDINGS in codes else EXIT_OK


def _job_failure(job: Job) -> str:
    if job.code in INTERRUPTED_CODES and job.stored:
        return (
            f"job {job.number} was interrupted (exit {job.code}): only the cells it finished "
            f"are here (what it did not finish: jobs/job-{job.number}/summary.md)"
        )
    how = f"was killed by signal {-job.code}" if job.code < 0 else f"exited {job.code}"
    return f"job {job.number} {how}: its cells are missing (its log: jobs/job-{job.number})"


def _pass_on(stop: KeyboardInterrupt, children: list) -> None:
    """The parent's SIGINT or SIGTERM, once to each child still running."""
    signum = signal.SIGTERM if signal_of(stop) == "SIGTERM" else signal.SIGINT
    for child, _ in children:
        if child.poll() is None:
            child.send_signal(signum)


def run_jobs(
    options: RunOptions,
    jobs: int,
    child_options: Sequence[str],
    junit: Optional[Path] = None,
    profile: Optional[str] = None,
) -> int:
    """`options`' cells over `jobs` children, each run with `child_options` (the parent's own
    left out) and a shard and folder of its own; then one summary of what they stored (`profile`:
    the profile they explore with, None for a deterministic run), JUnit XML to `junit`, and the
    exit code."""
    folders = [options.out / "jobs" / f"job-{job}" for job in range(1, jobs + 1)]
    before = {folder: stored_files(folder) for folder in folders}
    children, pumps = [], []
    stop: Optional[KeyboardInterrupt] = None
    try:
        for job, folder in enumerate(folders, start=1):
            command = [sys.executable, "-m", "harness"]
            command += child_arguments(child_options, child_shard(options.shard, job, jobs), folder)
            folder.mkdir(parents=True, exist_ok=True)
            stdout = (folder / "stdout.txt").open("w", encoding="utf-8")
            child = subprocess.Popen(
                command,
                stdout=stdout,
                stderr=subprocess.PIPE,
                text=True,
                env=_child_environment(jobs),
                start_new_session=True,  # a signal reaches a child once: from here (_pass_on)
            )
            pump = threading.Thread(target=_pump, args=(child.stderr, f"[job {job}/{jobs}] "))
            pump.start()
            children.append((child, stdout))
            pumps.append(pump)
        codes = [child.wait() for child, _ in children]
    except KeyboardInterrupt as signalled:
        _pass_on(signalled, children)
        if len(children) < len(folders):
            raise  # stopped while starting the jobs: the ones started stop too, no merge
        stop = signalled
        codes = [child.wait() for child, _ in children]  # each writes what it finished
    finally:
        for pump in pumps:
            pump.join()
        for _, stdout in children:
            stdout.close()
    ended = [
        Job(number, folder, code, stored_files(folder) - before[folder])
        for number, (folder, code) in enumerate(zip(folders, codes), start=1)
    ]
    run, warnings = merged_run(ended, options, profile)
    return _report(options, ended, run, warnings, junit, stop)


def _report(
    options: RunOptions,
    jobs: list[Job],
    run: StoredRun,
    warnings: list[str],
    junit: Optional[Path] = None,
    stop: Optional[KeyboardInterrupt] = None,
) -> int:
    """The merged summary, as one run's (harness/report/run_summary.py), with the jobs that
    failed among the reasons the run is incomplete and a section naming each job's folder."""
    # A job that could not run a SUT stored its records and why (INCOMPLETE): no failure.
    failing = [
        job
        for job in jobs
        if job.code not in (EXIT_OK, EXIT_FINDINGS) and not (job.code == EXIT_USAGE and job.stored)
    ]
    interrupted = None
    if stop is not None:  # the jobs the signal stopped did not finish; they are no failure
        stopped = [job for job in failing if job.code in INTERRUPTED_CODES and job.stored]
        failing = [job for job in failing if job not in stopped]
        done = sum(job.code in (EXIT_OK, EXIT_FINDINGS) for job in jobs)
        interrupted = Interruption(
            signal_of(stop),
            done,
            len(jobs),
            "jobs",
            tuple(
                f"job {job.number} (jobs/job-{job.number}/summary.md names what it did not finish)"
                for job in stopped
            ),
        )
    run = replace(run, not_run=run.not_run + tuple(_job_failure(job) for job in failing))
    # The merged run's own summary file, summary.md a copy (harness/report/summary_files.py).
    summary_path = run_summary_path(options.out, run.meta["run_id"])
    summary = run_summary(run, options.backend_table, summary_path, interrupted)
    section = [
        "",
        f"## The {len(jobs)} jobs (each one's own summary, results and repros)",
        "",
        *[f"- {job.folder / 'summary.md'} (exit {job.code})" for job in jobs],
        *[f"- warning: {warning}" for warning in warnings],
    ]
    write_run_summary(options.out, run.meta["run_id"], summary.markdown + "\n".join(section) + "\n")
    if junit is not None:
        write_junit(junit, run.checks, "run", RUN_CELL)
    for line in summary.stdout:
        print(line)
    print(f"summary: {summary_path}; each job's results under {options.out}/jobs")
    if stop is not None:
        return interrupted_exit_code(stop)
    codes = [job.code for job in jobs]
    return unless_nothing_checked(_worst(codes), summary.nothing_checked, options.shard is not None)
