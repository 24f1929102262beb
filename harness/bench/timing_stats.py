"""Statistics over raw timing samples: percentiles, spread, and a bootstrap ratio of medians."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reports.gate_stats import (
    coefficient_of_variation,
    mann_whitney_u,
    robust_coefficient_of_variation,
)

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    median_ns: float
    p10_ns: float
    p90_ns: float
    cv: float  # standard deviation / mean of the samples
    mad_cv: (
        float  # 1.4826 * median absolute deviation / median: the cv a rare outlier cannot inflate
    )


def summarize(samples: Sequence[int]) -> Summary:
    values = np.asarray(samples, dtype=np.float64)
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    return Summary(
        float(median),
        float(p10),
        float(p90),
        coefficient_of_variation(values),
        robust_coefficient_of_variation(values),
    )


@dataclass(frozen=True)
class Ratio:
    value: float
    low: float
    high: float


def _ratio_of_medians(new: np.ndarray, old: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(new, axis=axis) / np.median(old, axis=axis)


def ratio_of_medians(new: Sequence[int], old: Sequence[int], seed: int) -> Ratio:
    """median(new) / median(old), with a percentile-bootstrap confidence interval (each sample
    resampled on its own); `seed` makes the interval reproducible."""
    a, b = np.asarray(new, dtype=np.float64), np.asarray(old, dtype=np.float64)
    from scipy.stats import (
        bootstrap,
    )  # here, not at import: scipy.stats costs ~1.3 s, every kvh verb imports this

    interval = bootstrap(
        (a, b),
        _ratio_of_medians,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return Ratio(float(np.median(a) / np.median(b)), float(interval.low), float(interval.high))


NORMALITY_ALPHA = 0.05


@dataclass(frozen=True)
class Difference:
    test: str  # "welch_t" or "mann_whitney_u"
    p_value: float


def ab_test(new: Sequence[int], old: Sequence[int]) -> Difference:
    """Whether two SUTs' samples differ, by the test their shape calls for, as tritonbench's A/B
    analysis chooses it: Welch's t-test where a Shapiro-Wilk test finds both samples normal,
    else the Mann-Whitney U test (timing samples on a shared machine rarely are normal)."""
    from scipy.stats import shapiro, ttest_ind  # here, not at import: see ratio_of_medians

    a, b = np.asarray(new, dtype=np.float64), np.asarray(old, dtype=np.float64)
    if min(len(a), len(b)) < 3:  # Shapiro-Wilk needs three samples; the rank test does not
        return Difference("mann_whitney_u", mann_whitney_u(a, b)[1])
    # Shapiro-Wilk's p-value is accurate up to 5000 samples; the evenly spaced subsample keeps
    # the order they were taken in.
    normal = all(
        np.ptp(x) > 0 and shapiro(x[:: max(1, len(x) // 5000)]).pvalue >= NORMALITY_ALPHA
        for x in (a, b)
    )
    if normal:
        return Difference("welch_t", float(ttest_ind(a, b, equal_var=False).pvalue))
    return Difference("mann_whitney_u", mann_whitney_u(a, b)[1])
