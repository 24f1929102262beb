"""`kvh run --jobs N`: the run's cells spread over N child `kvh run` processes, then one verdict.

Each child runs a shard of its own (harness/plan/sharding.py; within `--shard i/M`, job k runs shard
(i-1) + M(k-1) + 1 of M*N, which lies inside shard i) into OUT/jobs/job-K, with the same
options. A deterministic run checks the same cells and scenarios whatever N is; with
`--profile`, each child spends the profile's time on its own cells, so N jobs explore about N
times as many examples in the same wall time. Children's progress goes to stderr prefixed with
their job; the parent reads back the rows they stored in this run and writes the merged
summary (and JUnit XML), and exits with the worst child's code.

Interrupted (SIGINT or SIGTERM), the parent passes the signal on to each child once (the
children run in sessions of their own, so a Ctrl-C at the terminal reaches only the parent),
waits while each writes what it finished (harness/cli/run.py), merges those rows into an
INTERRUPTED summary and exits 130 or 143.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Optional

import pandas as pd

from harness.cli.junit import RUN_CELL, write_junit
from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    interrupted_exit_code,
    signal_of,
)
from harness.plan.sharding import Shard
from harness.report.cell_result import ERA_TABLE_SUT
from reports.atomic import write_text_atomic
from reports.outcome import Outcome
from reports.store import load, run_meta
from reports.summary import (
    Interruption,
    era_table_line,
    summary_markdown,
    summary_markdown_table,
    verdict,
)

# `kvh run` options the parent keeps for itself; every other option is passed to each child.
PARENT_ONLY = ("jobs", "out", "shard", "junit", "handler", "verb")
CSV_OPTIONS = ("pool", "dtype", "era", "engine", "backend")


def child_shard(shard: Optional[Shard], job: int, jobs: int) -> Shard:
    """Job `job` (1-based) of `jobs` within `shard` (None: the whole run)."""
    outer_index, outer_count = (shard.index, shard.count) if shard else (1, 1)
    return Shard(outer_index + outer_count * (job - 1), outer_count * jobs)


def child_arguments(arguments: argparse.Namespace, shard: Shard, out: Path) -> list[str]:
    """The `kvh run` command line of one child: the parent's options, its shard and folder."""
    argv = ["run", "--shard", str(shard), "--out", str(out)]
    for spec in arguments.sut or ():
        argv += ["--sut", spec]
    for name in CSV_OPTIONS:
        if getattr(arguments, name):
            argv += [f"--{name}", ",".join(getattr(arguments, name))]
    for path in arguments.scenario or ():
        argv += ["--scenario", str(path)]
    if arguments.device:
        argv += ["--device", arguments.device]
    if arguments.profile:
        argv += ["--profile", arguments.profile]
    if arguments.special_values:
        argv.append("--special-values")
    argv += ["--seed", str(arguments.seed), "--examples", str(arguments.examples)]
    return argv + ["--timeout", repr(arguments.timeout)]


def _child_environment(jobs: int) -> dict[str, str]:
    """This environment, with torch's intra-op threads split between the jobs: N children each
    running as many threads as there are cores oversubscribe the machine (measured: --profile ci
    fell from 9.8 to 1.1-1.8 examples/s per job with 2 jobs of 2 threads on 2 cores)."""
    environment = dict(os.environ)
    environment.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    return environment


def _pump(stream, prefix: str) -> None:
    for line in stream:
        sys.stderr.write(f"{prefix}{line}")
    stream.close()


INTERRUPTED_CODES = (EXIT_INTERRUPTED, EXIT_TERMINATED)


def _wrote_results(folder: Path) -> bool:
    """Whether the child of `folder` got as far as its `results:` line (an interrupted child
    prints it once it has written what it finished); stdout.txt is this run's alone."""
    stdout = folder / "stdout.txt"
    return stdout.is_file() and any(
        line.startswith("results: ") for line in stdout.read_text(encoding="utf-8").splitlines()
    )


def _newest_rows(folders: list[Path], codes: list[int]) -> tuple[pd.DataFrame, list[str]]:
    """The check rows of each child's newest run (a child folder holds only its own runs), from
    the children that finished, or were interrupted and wrote what they finished: a folder whose
    child failed may hold only an older run's."""
    frames, warnings = [], []
    for folder, code in zip(folders, codes):
        kept = code in INTERRUPTED_CODES and _wrote_results(folder)
        if code not in (EXIT_OK, EXIT_FINDINGS) and not kept:
            continue
        store = load(folder)
        warnings += store.warnings
        frame = store.of("check")
        if not frame.empty:
            newest = frame.loc[frame["time"].idxmax(), "run_id"]
            frames.append(frame[frame["run_id"] == newest])
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), warnings


def _worst(codes: list[int]) -> int:
    """A child that died (a signal: a negative code) or failed inside is an internal error;
    then usage errors and interrupts; then findings."""
    if any(code < 0 or code == EXIT_INTERNAL for code in codes):
        return EXIT_INTERNAL
    others = sorted({code for code in codes if code not in (EXIT_OK, EXIT_FINDINGS)})
    if others:
        return others[0]
    return EXIT_FINDINGS if EXIT_FINDINGS in codes else EXIT_OK


def _job_failure(job: int, code: int, folder: Optional[Path] = None) -> str:
    if code in INTERRUPTED_CODES and folder is not None and _wrote_results(folder):
        return (
            f"job {job} was interrupted (exit {code}): only the cells it finished are here "
            f"(what it did not finish: jobs/job-{job}/summary.md)"
        )
    how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
    return f"job {job} {how}: its cells are missing (its log: jobs/job-{job})"


def _pass_on(stop: KeyboardInterrupt, children: list) -> None:
    """The parent's SIGINT or SIGTERM, once to each child still running."""
    signum = signal.SIGTERM if signal_of(stop) == "SIGTERM" else signal.SIGINT
    for child, _ in children:
        if child.poll() is None:
            child.send_signal(signum)


def run_jobs(arguments: argparse.Namespace, shard: Optional[Shard]) -> int:
    out, jobs = arguments.out, arguments.jobs
    folders = [out / "jobs" / f"job-{job}" for job in range(1, jobs + 1)]
    children, pumps = [], []
    stop: Optional[KeyboardInterrupt] = None
    try:
        for job, folder in enumerate(folders, start=1):
            command = [sys.executable, "-m", "harness"]
            command += child_arguments(arguments, child_shard(shard, job, jobs), folder)
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
    rows, warnings = _newest_rows(folders, codes)
    return _report(arguments, folders, codes, rows, warnings, stop)


def _report(
    arguments: argparse.Namespace,
    folders: list[Path],
    codes: list[int],
    rows: pd.DataFrame,
    warnings: list[str],
    stop: Optional[KeyboardInterrupt] = None,
) -> int:
    checks = rows[rows["sut"] != ERA_TABLE_SUT] if not rows.empty else rows
    model = rows[rows["sut"] == ERA_TABLE_SUT]["outcome"].tolist() if not rows.empty else []
    not_run = sorted(
        {
            line[len("NOT RUN ") :].strip()
            for folder in folders
            for line in (folder / "stdout.txt").read_text(encoding="utf-8").splitlines()
            if line.startswith("NOT RUN ")
        }
    )
    findings = checks[checks["outcome"] == str(Outcome.FINDING)] if not checks.empty else checks
    lines = [
        f"{row.sut}/{row.era}/{row.engine}/{row.backend}:{row.mode} `{row.scenario}`: "
        f"{row.detail} (repro: {Path(str(row.source)).parent / str(row.repro)})"
        for row in findings.itertuples()
    ]
    failing = [
        (job, code, folder)
        for job, (folder, code) in enumerate(zip(folders, codes), 1)
        if code not in (EXIT_OK, EXIT_FINDINGS)
    ]
    interrupted = None
    if stop is not None:  # the jobs the signal stopped did not finish; they are no failure
        stopped = tuple(
            f"job {job} (jobs/job-{job}/summary.md names what it did not finish)"
            for job, code, folder in failing
            if code in INTERRUPTED_CODES and _wrote_results(folder)
        )
        failing = [f for f in failing if f[1] not in INTERRUPTED_CODES or not _wrote_results(f[2])]
        done = sum(code in (EXIT_OK, EXIT_FINDINGS) for code in codes)
        interrupted = Interruption(signal_of(stop), done, len(codes), "jobs", stopped)
    failed = [_job_failure(job, code, folder) for job, code, folder in failing]
    not_run = not_run + failed
    head = verdict(checks, model, not_run, interrupted)
    era_line = era_table_line(model)
    meta = run_meta(arguments.device or "natural", arguments.seed, arguments.profile or "default")
    jobs = [
        "",
        era_line,
        "",
        f"## The {len(folders)} jobs (each one's summary has its divergences, skips and coverage)",
        "",
        *[f"- {folder / 'summary.md'} (exit {code})" for folder, code in zip(folders, codes)],
        *[f"- warning: {warning}" for warning in warnings],
    ]
    summary = summary_markdown(checks, meta, lines, [], [], model, not_run, interrupted)
    write_text_atomic(arguments.out / "summary.md", summary + "\n".join(jobs) + "\n")
    if arguments.junit is not None:
        write_junit(arguments.junit, rows, "run", RUN_CELL)
    print(summary_markdown_table(checks))
    for line in lines[:20]:
        print(f"FINDING {line}")
    for reason in not_run:
        print(f"NOT RUN {reason}")
    print(head)
    print(era_line)
    print(f"summary: {arguments.out / 'summary.md'}; each job's results under {arguments.out}/jobs")
    return interrupted_exit_code(stop) if stop is not None else _worst(codes)
