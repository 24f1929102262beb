"""Small statistics for the regression gate, on numpy alone (scipy is not a dependency)."""
from __future__ import annotations

import math

import numpy as np


def rank_average(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties given their average rank, and the size of every tie group."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    counts = np.diff(np.r_[starts, len(values)])
    average = starts + (counts + 1) / 2.0
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(average, counts)
    return ranks, counts


def mann_whitney_u(a, b) -> tuple[float, float]:
    """U statistic of `a` and its two-sided p-value: normal approximation with tie and
    continuity correction (scipy.stats.mannwhitneyu(method="asymptotic") gives the same)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return math.nan, 1.0
    ranks, ties = rank_average(np.concatenate([a, b]))
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    tie_term = float((ties ** 3 - ties).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return float(u1), 1.0
    z = (abs(u1 - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return float(u1), min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0)))


def coefficient_of_variation(samples) -> float:
    """Standard deviation / mean: one descheduled sample among thousands can multiply it."""
    samples = np.asarray(samples, dtype=float)
    if len(samples) < 2 or samples.mean() == 0:
        return 0.0
    return float(samples.std(ddof=1) / samples.mean())


def robust_coefficient_of_variation(samples) -> float:
    """1.4826 * median absolute deviation / median: equals the CV for normal samples, and rare
    outliers cannot inflate it (bench's `mad_cv`)."""
    samples = np.asarray(samples, dtype=float)
    if len(samples) < 2:
        return 0.0
    median = np.median(samples)
    return float(1.4826 * np.median(np.abs(samples - median)) / median) if median > 0 else 0.0

