"""The regression gate: each timing cell's latest run against a baseline, decided by a
Mann-Whitney U test on the raw samples together with a ratio threshold, so noise is not
reported as a regression. A cell is too noisy to judge when its robust CV (MAD-based) is
high: the std-based CV of a 1-token write on a shared machine is 0.5-0.8 from 2% of descheduled
samples while its median moves 0.1-0.6% between runs, and both statistics here are rank-based.

The baseline is drawn only from runs on the latest run's machine (MACHINE_COLUMNS: device name,
torch and triton versions, host class): a sharded nightly job whose shards land on different GPUs
would otherwise judge one GPU by another. A cell with earlier runs, none on this machine, is
"new" with a detail naming what differs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from reports.gate_stats import mann_whitney_u, robust_coefficient_of_variation
from reports.schema import CELL_COLUMNS, CELL_DETAIL_COLUMNS, MACHINE_COLUMNS

STATUSES = ("regression", "improvement", "unchanged", "noisy", "new")


@dataclass(frozen=True)
class GateSettings:
    baseline: str = "last:5"  # "last:N" (median of the last N runs on one machine) or a run id
    threshold: float = 0.10  # a relative change smaller than this is never reported
    alpha: float = 0.01  # significance level of the Mann-Whitney U test
    max_cv: float = 0.15  # above this robust coefficient of variation a cell is "noisy"

    def last_n(self) -> int | None:
        """N of "last:N", or None when the baseline names a run."""
        if not self.baseline.startswith("last:"):
            return None
        n = int(self.baseline.split(":", 1)[1])
        if n < 1:
            raise ValueError("last:N needs N >= 1")
        return n


def cell_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Bench and pytest-benchmark rows together, with their cell and machine columns as strings
    ("" where a row has none: older stores lack some machine columns) and a cell key."""
    key = CELL_COLUMNS + CELL_DETAIL_COLUMNS
    parts = [f for f in frames if not f.empty]
    if not parts:
        return pd.DataFrame(
            columns=[*key, *MACHINE_COLUMNS, "cell", "run_id", "time", "samples_ns"]
        )
    frame = pd.concat(parts, ignore_index=True)
    for column in key + MACHINE_COLUMNS:
        values = frame[column] if column in frame else pd.Series([None] * len(frame))
        frame[column] = values.map(lambda v: "" if v is None or v != v else str(v))
    frame["cell"] = frame[list(key)].agg(lambda row: " | ".join(v for v in row if v), axis=1)
    return frame


def timing_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The rows of `cell_rows` that carry raw samples."""
    frame = cell_rows(frames)
    return frame[
        frame["samples_ns"].map(lambda s: s is not None and len(s) > 0).astype(bool)
    ].copy()


def latest_rows(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The newest row of every key: a finding fixed in a later run no longer counts."""
    if frame.empty:
        return frame
    ordered = frame.sort_values(["time", "run_id"], kind="mergesort")
    return ordered.groupby(keys, dropna=False, sort=False).tail(1).reset_index(drop=True)


class _Run(NamedTuple):
    """One run of one cell on one machine: its samples pooled."""

    run_id: str
    time: pd.Timestamp
    machine: tuple[str, ...]  # MACHINE_COLUMNS' values
    samples: np.ndarray


def _runs_of(cell: pd.DataFrame) -> list[_Run]:
    """The runs of one cell, oldest first; one run id on two machines (shards of one job
    sharing an id) is two runs, never pooled."""
    runs = []
    for (run_id, *machine), rows in cell.groupby(["run_id", *MACHINE_COLUMNS], sort=False):
        samples = np.concatenate([np.asarray(s, dtype=float) for s in rows["samples_ns"]])
        runs.append(_Run(str(run_id), rows["time"].min(), tuple(machine), samples))
    return sorted(runs, key=lambda run: (run.time, run.run_id, run.machine))


def _machine_difference(latest: _Run, other: _Run) -> str:
    """What differs between two runs' machines, e.g. "device_name NVIDIA H200 vs NVIDIA A100"."""
    return "; ".join(
        f"{column} {mine or 'unrecorded'} vs {theirs or 'unrecorded'}"
        for column, mine, theirs in zip(MACHINE_COLUMNS, latest.machine, other.machine)
        if mine != theirs
    )


def _without_baseline(latest: _Run, earlier: list[_Run], settings: GateSettings) -> str:
    """Why a run has no baseline: "" when the cell has no run to compare with (first run, or the
    named baseline run did not time it); otherwise the machine it would have been compared with
    and what differs."""
    named = settings.last_n() is None
    others = [run for run in earlier if run.run_id == settings.baseline] if named else earlier
    if not others:
        return ""
    return f"no baseline on this machine ({_machine_difference(latest, others[-1])})"


def _classify(ratio: float, p_value: float, cv: float, s: GateSettings) -> str:
    if cv > s.max_cv:
        return "noisy"
    if p_value < s.alpha and ratio >= 1.0 + s.threshold:
        return "regression"
    if p_value < s.alpha and ratio <= 1.0 / (1.0 + s.threshold):
        return "improvement"
    return "unchanged"


def _judge(runs: list[_Run], settings: GateSettings) -> dict:
    latest, earlier = runs[-1], runs[:-1]
    same = [run for run in earlier if run.machine == latest.machine]
    n = settings.last_n()
    base = same[-n:] if n else [run for run in same if run.run_id == settings.baseline]
    row = {
        "latest_run": latest.run_id,
        "latest_time": latest.time,
        **dict(zip(MACHINE_COLUMNS, latest.machine)),
        "latest_median_ns": float(np.median(latest.samples)),
        "latest_samples": len(latest.samples),
        # This machine's runs only: the trend of what the gate compares.
        "history": [(str(run.time), float(np.median(run.samples))) for run in [*same, latest]],
        "baseline_runs": len(base),
        "detail": "",
    }
    if not base:
        return {
            **row,
            "status": "new",
            "detail": _without_baseline(latest, earlier, settings),
            "ratio": np.nan,
            "p_value": np.nan,
            "cv": robust_coefficient_of_variation(latest.samples),
            "baseline_median_ns": np.nan,
        }
    center = float(np.median([np.median(run.samples) for run in base]))
    pooled = np.concatenate([run.samples for run in base])
    _, p_value = mann_whitney_u(latest.samples, pooled)
    cv = max(
        robust_coefficient_of_variation(latest.samples),
        float(np.median([robust_coefficient_of_variation(run.samples) for run in base])),
    )
    ratio = row["latest_median_ns"] / center
    return {
        **row,
        "baseline_median_ns": center,
        "ratio": ratio,
        "p_value": p_value,
        "cv": cv,
        "status": _classify(ratio, p_value, cv, settings),
    }


def regression_table(timing: pd.DataFrame, settings: GateSettings) -> pd.DataFrame:
    """One row per cell: its latest run and that run's machine, the baseline (runs on the same
    machine), ratio, p-value, CV, status, history and a detail (why a cell with earlier runs has
    no baseline)."""
    rows = []
    for cell, group in timing.groupby("cell", sort=True):
        judged = _judge(_runs_of(group), settings)
        first = group.iloc[0]
        rows.append({"cell": cell, **{c: first[c] for c in CELL_COLUMNS}, **judged})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    order = {status: i for i, status in enumerate(STATUSES)}
    return table.sort_values(
        by=["status", "cell"],
        key=lambda c: c.map(order) if c.name == "status" else c,
        ignore_index=True,
    )


CHECK_CELL = ("sut", "backend", "mode", "pool", "era", "engine", "dtype", "scenario", "device")


def latest_checks(checks: pd.DataFrame) -> pd.DataFrame:
    return latest_rows(checks, [c for c in CHECK_CELL if c in checks.columns])
