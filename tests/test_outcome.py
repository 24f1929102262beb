"""One outcome vocabulary: the legacy "findings" of check rows reads and writes as "finding"."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reports.outcome import LEGACY_OUTCOMES, Outcome, normalised
from reports.schema import KINDS, STORE_FORMAT
from reports.store import METADATA_KEY, append, load, run_meta
from reports.summary import verdict

CHECK = {
    "backend": "plain",
    "pool": "mha",
    "dtype": "bf16",
    "sut": "builtin",
    "engine": "torch",
    "era": "current",
    "scenario": "small",
}


def test_legacy_spellings_map_to_members_and_current_values_stay() -> None:
    assert normalised("findings") == Outcome.FINDING and LEGACY_OUTCOMES == {"findings": "finding"}
    assert all(normalised(outcome) == outcome.value for outcome in Outcome)


def test_check_rows_still_saying_findings_are_stored_as_finding(tmp_path) -> None:
    frame = pd.DataFrame(
        [{**CHECK, "outcome": "findings"}, {**CHECK, "scenario": "b", "outcome": "pass"}]
    )
    append(tmp_path, frame, "check", run_meta("cpu", seed=0))
    checks = load(tmp_path).of("check")
    assert list(checks["outcome"]) == [Outcome.FINDING, Outcome.PASS]
    assert set(checks["kind_version"]) == {KINDS["check"].version} == {2}


def test_a_version_1_store_file_reads_findings_as_finding(tmp_path) -> None:
    meta = run_meta("cpu", seed=0, run_id="old")
    frame = pd.DataFrame(
        [{**CHECK, **meta, "kind": "check", "kind_version": 1, "outcome": "findings"}]
    )
    header = {"format": STORE_FORMAT, "version": 1, "kind": "check", "kind_version": 1, "meta": {}}
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(
        table.replace_schema_metadata({METADATA_KEY: json.dumps(header).encode()}),
        tmp_path / "check-old.parquet",
    )
    store = load(tmp_path)
    assert store.warnings == [] and list(store.of("check")["outcome"]) == [Outcome.FINDING]


def test_the_run_verdict_counts_either_spelling() -> None:
    frame = pd.DataFrame({"outcome": ["findings", Outcome.FINDING.value, "pass"]})
    assert verdict(frame).startswith("FAIL: 3 checks: 1 passed, 2 with findings")
