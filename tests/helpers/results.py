"""Planted rows for the results store: nightly bench histories with a planted slowdown and a
noisy cell (the gate's and the dashboard's test data), and passing check rows per backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reports.store import append, run_meta

TOKENS = (1, 16, 256, 4096)
SLOWED = ("torch", 256)  # (engine, tokens) slowed down by 20% in the latest run
NOISY = ("torch", 4096)  # the latest run's samples vary by about 40%
PEAK_GBPS = 20.0


def bench_rows(rng: np.random.Generator, latest: bool, plant: bool) -> pd.DataFrame:
    """One run's 8 bench rows (two engines, four token counts), 40 samples each; `latest` and
    `plant` together plant the slowdown and the noise."""
    rows = []
    for engine in ("reference", "torch"):
        for tokens in TOKENS:
            median_ns = 2000.0 + tokens * (150.0 if engine == "reference" else 50.0)
            factor, sigma = 1.0, 0.01
            if latest and plant and (engine, tokens) == SLOWED:
                factor = 1.2
            if latest and plant and (engine, tokens) == NOISY:
                sigma = 0.4
            samples = median_ns * factor * np.exp(sigma * rng.standard_normal(40))
            bytes_moved = tokens * 2 * 8 * 128 * 2 * 4
            gbps = bytes_moved / float(np.median(samples))
            rows.append(
                {
                    "backend": "plain",
                    "pool": "mha",
                    "dtype": "bf16",
                    "sut": "builtin",
                    "engine": engine,
                    "era": "current",
                    "tokens": tokens,
                    "device": "cpu",
                    "mode": "extend",
                    "samples_ns": samples.tolist(),
                    "bytes_moved": bytes_moved,
                    "gbps": gbps,
                    "roofline_fraction": gbps / PEAK_GBPS,
                    "peak_gbps": PEAK_GBPS,
                    "api_overhead_ratio": 1.0 + 0.4 / np.sqrt(tokens),
                    "api_overhead_ci_low": 0.98 + 0.4 / np.sqrt(tokens),
                    "api_overhead_ci_high": 1.03 + 0.4 / np.sqrt(tokens),
                }
            )
    return pd.DataFrame(rows)


def planted_results(folder: Path, runs: int = 6, plant: bool = True) -> Path:
    """`runs` nightly bench runs; the last carries the planted slowdown and noise."""
    rng = np.random.default_rng(0)
    for night in range(runs):
        meta = {
            **run_meta("cpu", seed=0, profile="nightly", run_id=f"night-{night}"),
            "time": f"2025-01-{night + 1:02d}T03:00:00+00:00",
        }
        append(folder, bench_rows(rng, latest=night == runs - 1, plant=plant), "bench", meta)
    return folder


def check_rows(backend: str) -> pd.DataFrame:
    """Two passing `check` rows (legacy and current era) of `backend` on mha/bf16."""
    return pd.DataFrame(
        [
            {
                "backend": backend,
                "pool": "mha",
                "dtype": "bf16",
                "sut": "builtin",
                "engine": "torch",
                "era": era,
                "scenario": "small",
                "outcome": "pass",
                "findings": 0,
            }
            for era in ("legacy", "current")
        ]
    )
