"""One Markdown table builder, and the tables built with it."""

from __future__ import annotations

import pandas as pd

from reports.markdown import markdown_table
from reports.summary import NO_CHECKS, summary_markdown_table, summary_table


def test_a_frame_is_a_github_table_without_its_index() -> None:
    frame = pd.DataFrame({"pool": ["mha", "swa_mha"], "us": ["1.5", None]}, index=[7, 9])
    lines = markdown_table(frame).splitlines()
    assert [cell.strip() for cell in lines[0].strip("|").split("|")] == ["pool", "us"]
    assert set(lines[1]) <= {"|", "-"}
    assert [cell.strip() for cell in lines[3].strip("|").split("|")] == ["swa_mha", ""]
    assert "7" not in lines[2] and len(lines) == 4


def test_an_empty_frame_prints_its_placeholder() -> None:
    assert markdown_table(pd.DataFrame(), empty="(no mutants)") == "(no mutants)"
    assert summary_markdown_table(pd.DataFrame()) == NO_CHECKS


def test_the_summary_table_shows_pool_and_dtype_as_columns() -> None:
    checks = pd.DataFrame(
        [
            {
                "pool": "mha",
                "dtype": "bf16",
                "sut": "builtin",
                "era": era,
                "engine": "torch",
                "outcome": outcome,
            }
            for era, outcome in (("legacy", "pass"), ("current", "finding"))
        ]
    )
    table = summary_table(checks)
    assert list(table.columns) == ["pool", "dtype", "legacy/torch", "current/torch"]
    row = summary_markdown_table(checks).splitlines()[2]
    assert [cell.strip() for cell in row.strip("|").split("|")] == ["mha", "bf16", "1/0", "0/1"]
