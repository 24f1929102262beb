"""Where a release-source fault's edit landed: the functions it changed, so that the catalogue
can ask whether a finding points inside one of them rather than merely at the right file name
(memory_pool.py holds KVWriteLoc, the unwrap helper and every base door of 0.5.23: naming the
file alone says little).

A finding names a place as `file.py:LINE`: a line that raised, a release call site, or the first
line of a release function its writes ran (harness/run/release_trail.py). It names an edited
function when LINE lies within that function's lines in the edited file, decorators included.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from mutants.generated import function_spans


@dataclass(frozen=True)
class Span:
    file: str  # the file's name, as a finding writes it
    first: int
    last: int
    name: str  # the function's qualified name, or "" where the edit is outside any function

    def __str__(self) -> str:
        return f"{self.file}:{self.first}-{self.last} {self.name}".rstrip()


def changed_lines(before: str, after: str) -> list[int]:
    """The 1-based numbers of the lines of `after` that an edit inserted or replaced (a deletion
    counts as the line that follows it)."""
    lines: list[int] = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag != "equal":
            lines.extend(range(start + 1, max(end, start + 1) + 1))
    return lines


def edited_spans(path: Path, before: str, after: str) -> list[Span]:
    """The innermost function of `after` around each changed line (the line itself where it is
    in no function), each once."""
    functions = function_spans(after)
    spans: list[Span] = []
    for line in changed_lines(before, after):
        around = [f for f in functions if f[0] <= line <= f[1]]
        first, last, name = min(around, key=lambda f: f[1] - f[0]) if around else (line, line, "")
        span = Span(path.name, first, last, name)
        if span not in spans:
            spans.append(span)
    return spans


def names_an_edited_function(spans: Iterable[Span], lines: Iterable[str]) -> bool:
    """Whether some finding line names `file:LINE` with LINE inside one of `spans` (a whole file
    name: swa_memory_pool.py:270 is not memory_pool.py)."""
    spans, lines = list(spans), list(lines)
    for span in spans:
        named = re.compile(rf"(?<![\w/]){re.escape(span.file)}:(\d+)")
        if any(span.first <= int(n) <= span.last for line in lines for n in named.findall(line)):
            return True
    return False


def touched_functions(changed: dict[str, tuple[str, str]]) -> set[str]:
    """'file.py Qual.name' of each function, in the text before an edit, around a line the edit
    changed (`changed`: path -> (before, after)): the names a release trail gives the functions
    the unmodified release ran (harness/run/release_trail.py, without the line)."""
    touched: set[str] = set()
    for path, (before, after) in changed.items():
        functions = function_spans(before)
        matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), False)
        for tag, start, end, _, _ in matcher.get_opcodes():
            if tag == "equal":
                continue
            for line in range(start + 1, max(end, start + 1) + 1):
                around = [f for f in functions if f[0] <= line <= f[1]]
                if around:
                    innermost = min(around, key=lambda f: f[1] - f[0])
                    touched.add(f"{Path(path).name} {innermost[2]}")
    return touched
