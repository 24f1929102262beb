"""Which record explains a campaign's survivor (harness/run/release_mutation.py), and a campaign's
record as a `mutation` row: the records are per release (mutants/survivors_*.py), their classes
and what they mean in mutants/survivor_record.py.
"""

from __future__ import annotations

from mutants.release_renames import DOOR_PREFIX, DOOR_WORD
from mutants.stretches_0_5_14 import STRETCHES_0_5_14
from mutants.stretches_0_5_23 import STRETCHES_0_5_23
from mutants.survivor_record import GAP, OUT_OF_REACH, Stretch, Survivor
from mutants.survivors_0_5_14 import SURVIVORS_0_5_14
from mutants.survivors_0_5_14_mla import SURVIVORS_0_5_14_MLA
from mutants.survivors_0_5_14_scope import SURVIVORS_0_5_14_SCOPE
from mutants.survivors_0_5_23 import SURVIVORS_0_5_23
from mutants.survivors_0_5_23_backends import SURVIVORS_0_5_23_BACKENDS
from mutants.survivors_0_5_23_context import SURVIVORS_0_5_23_CONTEXT
from mutants.survivors_0_5_23_cp import SURVIVORS_0_5_23_CP
from mutants.survivors_0_5_23_full import SURVIVORS_0_5_23_FULL
from mutants.survivors_0_5_23_padded import SURVIVORS_0_5_23_PADDED
from mutants.survivors_0_5_23_scope import SURVIVORS_0_5_23_SCOPE
from mutants.survivors_0_5_23_zigzag import SURVIVORS_0_5_23_ZIGZAG
from reports.mutation_score import NOT_KILLED, UNREACHED

SURVIVORS: tuple[Survivor, ...] = (
    SURVIVORS_0_5_23
    + SURVIVORS_0_5_23_SCOPE
    + SURVIVORS_0_5_23_FULL
    + SURVIVORS_0_5_23_BACKENDS
    + SURVIVORS_0_5_23_CONTEXT
    + SURVIVORS_0_5_23_CP
    + SURVIVORS_0_5_23_ZIGZAG
    + SURVIVORS_0_5_23_PADDED
    + SURVIVORS_0_5_14
    + SURVIVORS_0_5_14_SCOPE
    + SURVIVORS_0_5_14_MLA
)
STRETCHES: tuple[Stretch, ...] = STRETCHES_0_5_23 + STRETCHES_0_5_14


def classified(release: str, id: str, diff: str) -> Survivor | None:
    """The record that explains the survivor `id` of `release` whose diff is `diff`, if any (a
    mutant judged and not killed, or an unreached one that a record names by itself)."""
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    for record in SURVIVORS:
        # A mutant that only removes a line (RemoveDecorator) adds none: its record says "".
        said = record.mutated in added if added else not record.mutated
        if record.release == release and record.id == id and said:
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


def unreached_class(release: str, record: dict) -> tuple[str, str] | None:
    """(class, reason) of an UNREACHED mutant from what was measured (its statement cannot run on
    this machine) or from a stretch read in the release (STRETCHES), if either says."""
    if record.get("cannot_run_here"):
        return (
            OUT_OF_REACH,
            f"its statement cannot run on this machine: {record['cannot_run_here']}",
        )
    stretch = _stretch(release, record)
    return None if stretch is None else (stretch.kind, _with_closer(stretch))


def _stretch(release: str, record: dict) -> Stretch | None:
    for stretch in STRETCHES:
        if stretch.holds(release, record["function"], record["line"]):
            return stretch
    return None


def _with_closer(found: Survivor | Stretch) -> str:
    return found.reason + (f" (closed by {found.closed_by})" if found.closed_by else "")


def closed_gap(release: str, record: dict) -> bool:
    """Whether a survivor's explanation (its record, or an unreached one's stretch when no record
    names it) is a gap that names what closed it since it was judged: judged again, never
    carried (harness/cli/release_mutation.py)."""
    if record["status"] not in NOT_KILLED:
        return False
    found = classified(release, record["id"], record.get("diff", ""))
    if found is None and record["status"] == UNREACHED and not record.get("cannot_run_here"):
        found = _stretch(release, record)
    return found is not None and found.kind == GAP and bool(found.closed_by)


def stamped(record: dict, sut: str, release: str | None = None) -> dict:
    """A campaign's record of `sut` as a `mutation` row: whether it is a door's, and a survivor's
    class and reason from the records of `release` (`sglang==X`; default the sut) ("" where none
    explains it)."""
    release = release or sut
    found = (
        classified(release, record["id"], record.get("diff", ""))
        if record["status"] in NOT_KILLED
        else None
    )
    said = (found.kind, _with_closer(found)) if found else None
    if said is None and record["status"] == UNREACHED:
        said = unreached_class(release, record)
    row = {k: v for k, v in record.items() if k not in ("id", "cells")}
    return {
        **row,
        "mutant": record["id"],
        "sut": sut,
        "door": is_door(record["function"]),
        "cells": " x ".join(",".join(record.get("cells", {}).get(k, ())) for k in
                            ("pools", "dtypes", "backends")),
        "survivor_class": said[0] if said else "",
        "survivor_reason": said[1] if said else "",
    }  # fmt: skip
