"""Statistics for the regression gate: the rank test from scipy, the spreads on numpy."""

from __future__ import annotations

import math

import numpy as np


def mann_whitney_u(a, b) -> tuple[float, float]:
    """U statistic of `a` and its two-sided p-value: the normal approximation with tie and
    continuity correction (an exact p-value is not needed for thousands of timing samples, and
    the asymptotic one is what the gate has always used)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return math.nan, 1.0
    from scipy.stats import (
        mannwhitneyu,
    )  # here, not at import: scipy.stats costs ~1.3 s, every kvh verb imports this

    result = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    p_value = float(result.pvalue)
    return float(result.statistic), 1.0 if math.isnan(p_value) else p_value


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
