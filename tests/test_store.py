"""The results store: immutable per-writer files, concurrent appends, skipped bad files, legacy
`kvh run` results, and the statistics the gate uses. (Its pytest-benchmark ingestion runs a
fresh pytest: tests/e2e/test_benchmarks.py.)"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from reports.gate_stats import coefficient_of_variation, mann_whitney_u
from reports.outcome import Outcome
from reports.schema import KINDS, LEGACY_CHECK_COLUMNS, META_COLUMNS
from reports.store import append, load, run_meta
from tests.helpers.results import bench_rows


def test_concurrent_appends_of_one_run_never_clobber(tmp_path):
    meta = run_meta("cpu", seed=3, profile="quick", sut_version="0.5.23")
    frames = [bench_rows(np.random.default_rng(i), latest=False, plant=False) for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        paths = list(pool.map(lambda f: append(tmp_path, f, "bench", meta), frames))
    assert len(set(paths)) == 12 and sorted(tmp_path.glob("*.parquet")) == sorted(paths)
    assert not list(tmp_path.glob(".*"))  # no temp file left behind
    store = load(tmp_path)
    bench = store.of("bench")
    assert store.warnings == [] and len(bench) == 12 * 8
    assert set(META_COLUMNS) <= set(bench.columns)
    first = bench.iloc[0]
    assert (first["kind"], first["kind_version"], first["profile"], first["seed"]) == (
        "bench",
        1,
        "quick",
        3,
    )
    assert first["sut_version"] == "0.5.23" and first["torch_version"] and first["git_commit"]
    assert len(first["samples_ns"]) == 40


def test_corrupt_and_foreign_files_are_skipped_with_a_warning(tmp_path):
    append(
        tmp_path,
        bench_rows(np.random.default_rng(0), latest=False, plant=False),
        "bench",
        run_meta("cpu", seed=0),
    )
    (tmp_path / "truncated.parquet").write_bytes(b"PAR1 not really")
    pd.DataFrame({"x": [1, 2]}).to_parquet(tmp_path / "foreign.parquet")
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    (tmp_path / "broken.json").write_text("{")
    store = load(tmp_path)
    assert len(store.of("bench")) == 8
    skipped = sorted(w.split(":")[0] for w in store.warnings)
    assert [s.rsplit("/", 1)[1] for s in skipped] == [
        "broken.json",
        "foreign.parquet",
        "notes.json",
        "truncated.parquet",
    ]


def test_append_rejects_unknown_kinds_and_missing_columns(tmp_path):
    meta = run_meta("cpu", seed=0)
    with pytest.raises(ValueError, match="unknown record kind"):
        append(tmp_path, pd.DataFrame(), "timing", meta)
    with pytest.raises(ValueError, match="samples_ns"):
        append(
            tmp_path, pd.DataFrame([{c: "x" for c in KINDS["bench"].required[:-1]}]), "bench", meta
        )
    assert not list(tmp_path.iterdir())


def test_legacy_run_results_read_as_check_records(tmp_path):
    # `kvh run --out` before the store: schema_version 1 columns, no kvh metadata, "findings".
    rows = [
        {
            "schema_version": 1,
            "run_id": "old",
            "time": "2024-12-01T00:00:00+00:00",
            "git_commit": "abc",
            "host": "h",
            "device": "cpu",
            "seed": 0,
            "sut": "builtin",
            "backend": "plain",
            "mode": "extend",
            "pool": "mha",
            "era": "current",
            "engine": "torch",
            "dtype": "bf16",
            "scenario": scenario,
            "tokens": 4,
            "outcome": outcome,
            "findings": found,
        }
        for scenario, outcome, found in (("s", "pass", 0), ("t", "findings", 2))
    ]
    pd.DataFrame(rows, columns=list(LEGACY_CHECK_COLUMNS)).to_parquet(tmp_path / "results.parquet")
    checks = load(tmp_path).of("check")
    assert list(checks["outcome"]) == [Outcome.PASS, Outcome.FINDING]
    assert set(LEGACY_CHECK_COLUMNS) <= set(checks.columns)


def test_mann_whitney_matches_the_textbook_value():
    # scipy.stats.mannwhitneyu(males, females, method="asymptotic") documents U=17, p=0.1113...
    u, p = mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert u == 17.0 and p == pytest.approx(0.11134688653314041, rel=1e-12)
    assert mann_whitney_u([1.0] * 5, [1.0] * 7) == (17.5, 1.0)  # all tied: no evidence
    u, p = mann_whitney_u(np.arange(30.0), np.arange(30.0) + 100)
    assert u == 0.0 and p < 1e-9
    assert mann_whitney_u([], [1.0])[1] == 1.0  # nothing to compare


def test_coefficient_of_variation():
    assert coefficient_of_variation([10.0, 10.0]) == 0.0
    assert coefficient_of_variation([9.0, 11.0]) == pytest.approx(np.sqrt(2) / 10)
