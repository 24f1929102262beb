"""Statistics over raw timing samples: percentiles, spread, and a bootstrap ratio of medians."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from reports.stats import coefficient_of_variation, robust_coefficient_of_variation

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    median_ns: float
    p10_ns: float
    p90_ns: float
    cv: float          # standard deviation / mean of the samples
    mad_cv: float      # 1.4826 * median absolute deviation / median: the cv a rare outlier cannot inflate


def summarize(samples: Sequence[int]) -> Summary:
    values = np.asarray(samples, dtype=np.float64)
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    return Summary(float(median), float(p10), float(p90), coefficient_of_variation(values),
                   robust_coefficient_of_variation(values))


@dataclass(frozen=True)
class Ratio:
    value: float
    low: float
    high: float


def ratio_of_medians(new: Sequence[int], old: Sequence[int], seed: int) -> Ratio:
    """median(new) / median(old), with a percentile-bootstrap confidence interval."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(new, dtype=np.float64), np.asarray(old, dtype=np.float64)
    resampled_a = np.median(rng.choice(a, (BOOTSTRAP_RESAMPLES, len(a))), axis=1)
    resampled_b = np.median(rng.choice(b, (BOOTSTRAP_RESAMPLES, len(b))), axis=1)
    ratios = resampled_a / resampled_b
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Ratio(float(np.median(a) / np.median(b)), float(low), float(high))
