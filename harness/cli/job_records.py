"""What the children of `kvh run --jobs N` stored in this run, merged into the records one run
would have stored: read back from each child's folder (only the files it wrote in this run, so
an older run's never joins) and put in the order one process checks the cells."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from harness.plan.run_options import RunOptions
from harness.report.run_summary import StoredRun
from harness.run.cells import planned_cells
from reports.records import records_frame
from reports.store import load, run_meta

INTERRUPTED_CODES = (EXIT_INTERRUPTED, EXIT_TERMINATED)
# How a child that wrote its results ends: checked, with findings, with a SUT it could not run
# (INCOMPLETE), or stopped by a signal after writing what it finished.
WROTE_RESULTS_CODES = (EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, *INTERRUPTED_CODES)
# The record kinds a child stores that its parent's summary reads (harness/report/run_summary.py).
RUN_KINDS = ("check", "coverage", "exploration", "not-run", "sut")
# A cell's columns in a stored row: the key that orders the merged rows as one run orders them.
CELL = ("pool", "dtype", "backend", "mode")


def stored_files(folder: Path) -> frozenset[str]:
    """The results files in `folder`, named as reports.store.load names a row's `source`."""
    return frozenset(str(path) for path in Path(folder).rglob("*.parquet"))


@dataclass(frozen=True)
class Job:
    """One child: its number (1-based), folder and exit code, and the results files it wrote in
    this run (those in its folder that were not there before it started)."""

    number: int
    folder: Path
    code: int
    written: frozenset[str] = frozenset()

    @property
    def stored(self) -> bool:
        """Whether its records join the merge: it ended by writing its check records (a child
        writes them last, interrupted or not; each file whole, or not at all)."""
        wrote = any(Path(name).name.startswith("check-") for name in self.written)
        return wrote and self.code in WROTE_RESULTS_CODES


def _records(job: Job) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The job's records of each RUN_KINDS kind from this run, and its store's warnings."""
    store = load(job.folder)
    frames = {kind: store.of(kind) for kind in RUN_KINDS}
    return {
        kind: frame[frame["source"].isin(job.written)]
        for kind, frame in frames.items()
        if not frame.empty
    }, store.warnings


def _in_run_order(frame: pd.DataFrame, order: dict[tuple, int]) -> pd.DataFrame:
    """`frame`'s rows in the order one run checks their cells (`order`): each cell lies in one
    child, so a stable sort by cell gives the rows as one process would have written them."""
    if frame.empty:
        return frame
    ranks = [order.get(cell, len(order)) for cell in frame[list(CELL)].itertuples(index=False)]
    return frame.iloc[np.argsort(ranks, kind="stable")].reset_index(drop=True)


def _merged(
    kind: str, frames: list[pd.DataFrame], order: Optional[dict[tuple, int]] = None
) -> pd.DataFrame:
    """The kind's rows of every job, in run order (`order`) or else in job order."""
    if not frames:
        return records_frame(kind, [])
    merged = pd.concat(frames, ignore_index=True)
    return merged if order is None else _in_run_order(merged, order)


def merged_run(
    jobs: list[Job], options: RunOptions, profile: Optional[str]
) -> tuple[StoredRun, list[str]]:
    """What the jobs that stored their records stored, merged as one run's (`profile`: the
    profile they explored with, None for a deterministic run), and their stores' warnings."""
    parts: dict[str, list[pd.DataFrame]] = {kind: [] for kind in RUN_KINDS}
    warnings: list[str] = []
    for job in jobs:
        if not job.stored:
            continue
        frames, read = _records(job)
        warnings += read
        for kind, frame in frames.items():
            parts[kind].append(frame)
    order = {
        (cell.pool, cell.dtype, cell.backend.name, cell.mode): rank
        for rank, cell in enumerate(planned_cells(options))
    }
    not_run = _merged("not-run", parts["not-run"])
    suts = _merged("sut", parts["sut"]).drop(columns=["source"], errors="ignore")
    run = StoredRun(
        run_meta(options.device or "natural", options.seed, profile or "default"),
        _merged("check", parts["check"], order),
        _merged("coverage", parts["coverage"], order),
        _merged("exploration", parts["exploration"], order) if profile else None,
        # Every job loads every SUT: one that did not load is named once.
        tuple(dict.fromkeys(not_run["reason"])),
        tuple(suts.drop_duplicates("sut").to_dict("records")),
    )
    return run, warnings
