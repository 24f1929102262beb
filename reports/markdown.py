"""The one Markdown table builder: a frame as a GitHub table, its columns as the header."""

from __future__ import annotations

import math

import pandas as pd

EMPTY = "(no rows)"


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def markdown_table(frame: pd.DataFrame, empty: str = EMPTY) -> str:
    """`frame` as a GitHub-flavoured Markdown table (its index is not shown; reset it into columns
    first when it carries data); `empty` when the frame has no rows. Cells are written as they
    are: format numbers into strings before, so tables keep the precision their verb chose."""
    if frame.empty:
        return empty
    text = frame.map(lambda value: "" if value is None or _is_nan(value) else str(value))
    return text.to_markdown(index=False, tablefmt="github", disable_numparse=True)
