"""Where a fault's edit landed (harness/run/edited_functions.py): the function around each changed
line, and whether a finding's `file:LINE` lies inside one."""

from __future__ import annotations

from pathlib import Path

from harness.run.edited_functions import (
    Span,
    changed_lines,
    edited_spans,
    names_an_edited_function,
)

BEFORE = """import functools


class Pool:
    @functools.lru_cache
    def set_kv_buffer(self, loc):
        index = loc
        return index

    def other(self):
        return 1


TOP = 1
"""


def test_changed_lines_are_the_edited_files_inserted_or_replaced_lines() -> None:
    after = BEFORE.replace("index = loc", "index = loc + 1").replace("TOP = 1", "TOP = 2")
    assert changed_lines(BEFORE, after) == [7, 14]
    assert changed_lines(BEFORE, BEFORE.replace("        index = loc\n", "")) == [7]


def test_a_span_is_the_innermost_function_with_its_decorators_or_the_line_itself() -> None:
    after = BEFORE.replace("index = loc", "index = loc + 1").replace("TOP = 1", "TOP = 2")
    spans = edited_spans(Path("srt/mem_cache/memory_pool.py"), BEFORE, after)
    assert spans == [
        Span("memory_pool.py", 5, 8, "Pool.set_kv_buffer"),
        Span("memory_pool.py", 14, 14, ""),
    ]


def test_a_finding_names_an_edit_only_inside_its_span_and_by_the_whole_file_name() -> None:
    spans = [Span("memory_pool.py", 5, 8, "Pool.set_kv_buffer")]
    assert names_an_edited_function(spans, ["(release functions run: memory_pool.py:5 Pool.x)"])
    assert names_an_edited_function(spans, ["IndexError (memory_pool.py:8) at forward 0"])
    assert not names_an_edited_function(spans, ["memory_pool.py:9 Pool.other"])
    assert not names_an_edited_function(spans, ["AssertionError (swa_memory_pool.py:6)"])
