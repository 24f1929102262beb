"""The regression gate: each timing cell's latest run against a baseline, decided by a
Mann-Whitney U test on the raw samples together with a ratio threshold, so noise is not
reported as a regression. A cell is too noisy to judge when its robust CV (MAD-based) is
high: the std-based CV of a 1-token write on a shared machine is 0.5-0.8 from 2% of descheduled
samples while its median moves 0.1-0.6% between runs, and both statistics here are rank-based."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports.gate_stats import mann_whitney_u, robust_coefficient_of_variation
from reports.schema import CELL_COLUMNS, CELL_DETAIL_COLUMNS

STATUSES = ("regression", "improvement", "unchanged", "noisy", "new")


@dataclass(frozen=True)
class GateSettings:
    baseline: str = "last:5"  # "last:N" (median of the last N runs) or a run id
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
    """Bench and pytest-benchmark rows together, with their cell columns as strings and a key."""
    key = CELL_COLUMNS + CELL_DETAIL_COLUMNS
    parts = [f for f in frames if not f.empty]
    if not parts:
        return pd.DataFrame(columns=[*key, "cell", "run_id", "time", "samples_ns"])
    frame = pd.concat(parts, ignore_index=True)
    for column in key:
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


def _runs_of(cell: pd.DataFrame) -> list[tuple[str, pd.Timestamp, np.ndarray]]:
    """(run id, time, pooled samples) per run of one cell, oldest first."""
    runs = []
    for run_id, rows in cell.groupby("run_id", sort=False):
        samples = np.concatenate([np.asarray(s, dtype=float) for s in rows["samples_ns"]])
        runs.append((str(run_id), rows["time"].min(), samples))
    return sorted(runs, key=lambda run: (run[1], run[0]))


def _classify(ratio: float, p_value: float, cv: float, s: GateSettings) -> str:
    if cv > s.max_cv:
        return "noisy"
    if p_value < s.alpha and ratio >= 1.0 + s.threshold:
        return "regression"
    if p_value < s.alpha and ratio <= 1.0 / (1.0 + s.threshold):
        return "improvement"
    return "unchanged"


def _judge(runs: list, settings: GateSettings) -> dict:
    latest_id, latest_time, latest = runs[-1]
    n = settings.last_n()
    base = runs[:-1][-n:] if n else [run for run in runs[:-1] if run[0] == settings.baseline]
    history = [(str(time), float(np.median(samples))) for _, time, samples in runs]
    row = {
        "latest_run": latest_id,
        "latest_time": latest_time,
        "latest_median_ns": float(np.median(latest)),
        "latest_samples": len(latest),
        "history": history,
        "baseline_runs": len(base),
    }
    if not base:
        return {
            **row,
            "status": "new",
            "ratio": np.nan,
            "p_value": np.nan,
            "cv": robust_coefficient_of_variation(latest),
            "baseline_median_ns": np.nan,
        }
    center = float(np.median([np.median(samples) for _, _, samples in base]))
    pooled = np.concatenate([samples for _, _, samples in base])
    _, p_value = mann_whitney_u(latest, pooled)
    cv = max(
        robust_coefficient_of_variation(latest),
        float(np.median([robust_coefficient_of_variation(samples) for _, _, samples in base])),
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
    """One row per cell: its latest run, the baseline, ratio, p-value, CV, status and history."""
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
