"""Bench records: one row per measured cell and cache state, appended to the results store.

Column names follow the results store's "bench" kind (reports/schema.py); docs/bench.md
documents each column. Raw samples are kept in the list column samples_ns.
"""
from __future__ import annotations

BENCH_SCHEMA_VERSION = 1
BENCH_COLUMNS = (
    # run metadata
    "schema_version", "run_id", "time", "git_commit", "host", "device", "seed",
    # the cell
    "backend", "mode", "pool", "dtype", "sut", "sut_version", "engine", "era", "tokens", "layers",
    "cache", "timer",
    # outcome: measured | finding | error; error says why a cell has no numbers
    "outcome", "error",
    # statistics of the time per write (one forward over all layers), in ns
    "samples", "median_ns", "p10_ns", "p90_ns", "cv", "mad_cv",
    "tokens_per_s", "bytes_moved", "gbps",
    # the roofline: a contiguous copy moving the same bytes, same run, same device
    "copy_median_ns", "peak_gbps", "roofline_fraction",
    # the API overhead: median(this era's call site) / median(the oldest measured era's), bootstrap 95% CI
    "api_baseline_era", "api_overhead_ratio", "api_overhead_ci_low", "api_overhead_ci_high",
    # conditions
    "threads", "load_avg_1m", "passes", "samples_ns",
)
