"""reports/schema.py is the only list of columns, and every row is validated against it."""

from __future__ import annotations

import pandas as pd
import pytest

from reports.records import records_frame
from reports.schema import KINDS, META_COLUMNS, SchemaError, validate_row
from reports.store import append, run_meta

BENCH = {
    "backend": "plain",
    "pool": "mha",
    "dtype": "bf16",
    "sut": "builtin",
    "engine": "torch",
    "era": "current",
    "tokens": 16,
    "samples_ns": [1, 2, 3],
}


def test_a_row_with_an_undeclared_column_is_refused(tmp_path) -> None:
    with pytest.raises(SchemaError, match=r"bench records carry columns .* \['speed'\]"):
        validate_row("bench", {**BENCH, "speed": 3.0})
    with pytest.raises(SchemaError, match="speed"):
        append(tmp_path, pd.DataFrame([{**BENCH, "speed": 3.0}]), "bench", run_meta("cpu", seed=0))
    assert not list(tmp_path.iterdir())


def test_a_row_without_a_required_column_is_refused() -> None:
    row = {key: value for key, value in BENCH.items() if key != "samples_ns"}
    with pytest.raises(SchemaError, match=r"lack required columns \['samples_ns'\]"):
        validate_row("bench", row)
    with pytest.raises(SchemaError, match="unknown record kind"):
        validate_row("timing", BENCH)


def test_required_columns_the_store_stamps_from_metadata_may_be_left_to_it(tmp_path) -> None:
    assert "device" in KINDS["bench"].required and "device" in META_COLUMNS
    assert validate_row("bench", BENCH) == BENCH
    append(tmp_path, records_frame("bench", [BENCH]), "bench", run_meta("cpu", seed=0))
    assert len(list(tmp_path.glob("bench-*.parquet"))) == 1


def test_records_frame_has_the_kinds_columns_in_order_even_without_rows() -> None:
    for kind in KINDS.values():
        assert len(set(kind.columns)) == len(kind.columns) and set(kind.required) <= set(
            kind.columns
        )
        assert list(records_frame(kind.name, []).columns) == list(kind.columns)
