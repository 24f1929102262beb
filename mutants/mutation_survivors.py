"""Why a generated mutant of a release survives (harness/run/release_mutation.py): each survivor of
a campaign read and classified, as data that the score (mutants/mutation_score.py) and its report
both read.

- EQUIVALENT: no input can tell the mutant from the release; the reason says why.
- OUT_OF_REACH: the mutated code runs only where this machine cannot (a GPU-only branch or
  kernel); the reason names the branch.
- GAP: kvh should have noticed. A gap stays listed, with what closed it (the scenario, oracle or
  backend driver), so that a later campaign shows the kill; an open gap counts against the score.

A record names its mutant by the campaign's id (file, cosmic-ray operator, occurrence) and by the
mutated line as the diff shows it, so a record written for one release cannot excuse another
release's mutant that happens to share an occurrence number.
"""

from __future__ import annotations

from dataclasses import dataclass

from mutants.release_renames import DOOR_PREFIX, DOOR_WORD

EQUIVALENT, OUT_OF_REACH, GAP = "equivalent", "out of reach on a CPU", "gap"
CLASSES = (EQUIVALENT, OUT_OF_REACH, GAP)


@dataclass(frozen=True)
class Survivor:
    release: str  # "sglang==0.5.23"
    id: str  # the campaign's mutant id: "srt/mem_cache/memory_pool.py:core/NumberReplacer:12"
    mutated: str  # the diff's added line, stripped: "+    if x > 1:" without the "+"
    kind: str  # one of CLASSES
    reason: str
    closed_by: str = ""  # for a gap: the scenario, oracle or driver that now kills it


def _alike(release: str, kind: str, reason: str, mutants: tuple[tuple[str, str], ...]):
    """Records of one reason for several mutants, each as (id, mutated line)."""
    return tuple(Survivor(release, id, mutated, kind, reason) for id, mutated in mutants)


_POOL = "srt/mem_cache/memory_pool.py:core/ReplaceBinaryOperator_"
# The doors' out-of-bounds probe: maybe_detect_oob (utils/async_probe.py:190 in 0.5.23) returns
# before it reads its bound unless SGLANG_ENABLE_ASYNC_ASSERT is set, which kvh leaves as the
# release ships it (unset): in that configuration no scenario reaches the bound.
_ASYNC_ASSERT_BOUND = (
    "the mutated expression is the upper bound handed to maybe_detect_oob, which returns before "
    "reading it unless SGLANG_ENABLE_ASYNC_ASSERT is set (off by default; kvh judges the release "
    "as it ships): no write the release makes depends on it"
)

# Every operator cosmic-ray puts in place of `+` (ReplaceBinaryOperator_Add_*), as Python writes
# it. None raises on the pool's positive sizes, and the bound is never read.
_ADD_REPLACED = (
    ("Sub", "-"), ("Mul", "*"), ("Div", "/"), ("FloorDiv", "//"), ("Mod", "%"), ("Pow", "**"),
    ("LShift", "<<"), ("RShift", ">>"), ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
)  # fmt: skip

_MLA_BOUND = "(self.size + self.page_size) * self._write_loc_dcp_span,"
SURVIVORS: tuple[Survivor, ...] = _alike(
    "sglang==0.5.23", EQUIVALENT, _ASYNC_ASSERT_BOUND,
    tuple(
        (f"{_POOL}Add_{op}:{occurrence}", line.replace("+", symbol, 1))
        for op, symbol in _ADD_REPLACED
        for occurrence, line in (
            (37, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MHA)")'),
            (66, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MLA)")'),
            (67, _MLA_BOUND),
        )
    )
    # The MLA bound's `*`, replaced as cosmic-ray does (ReplaceBinaryOperator_Mul_*).
    + tuple(
        (f"{_POOL}Mul_{op}:53", _MLA_BOUND.replace(" * ", f" {symbol} ", 1))
        for op, symbol in _ADD_REPLACED if op != "Mul"
    ) + (
        (f"{_POOL}Mul_Add:53", _MLA_BOUND.replace(" * ", " + ", 1)),
    ),
)  # fmt: skip


def classified(release: str, id: str, diff: str) -> Survivor | None:
    """The record that explains the survivor `id` of `release` whose diff is `diff`, if any."""
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    for record in SURVIVORS:
        if record.release == release and record.id == id and record.mutated in added:
            return record
    return None


def is_door(function: str) -> bool:
    """A pool's write door ('memory_pool.py MHATokenToKVPool.set_kv_buffer'): a method whose name
    is set_*buffer, of a class in a *pool file (a backend's own _set_kv_buffer is not a door)."""
    base, _, qualified = function.partition(" ")
    method = qualified.split(".")[-1]
    return (
        "pool" in base and "." in qualified
        and method.startswith(DOOR_PREFIX) and method.endswith(DOOR_WORD)
    )  # fmt: skip


def stamped(record: dict, release: str) -> dict:
    """A campaign's record as a `mutation` row: whether it is a door's, and a survivor's class and
    reason from its record here ("" where none explains it)."""
    found = (
        classified(release, record["id"], record.get("diff", ""))
        if record["status"] == "survived"
        else None
    )
    row = {k: v for k, v in record.items() if k not in ("id", "cells")}
    return {
        **row,
        "mutant": record["id"],
        "sut": release,
        "door": is_door(record["function"]),
        "cells": " x ".join(",".join(record.get("cells", {}).get(k, ())) for k in
                            ("pools", "dtypes", "backends")),
        "survivor_class": found.kind if found else "",
        "survivor_reason": (found.reason + (f" (closed by {found.closed_by})" if found.closed_by
                                            else "")) if found else "",
    }  # fmt: skip
