"""Capabilities of a write door decided by running it on a tiny pool, not by reading its source.

A door unwraps a KVWriteLoc when, handed `KVWriteLoc(loc)`, it writes the bytes it writes for the
bare `loc`; whatever the release calls the code that takes the loc apart (a module helper, a
classmethod, a method) does not enter into it. The bare loc is the control: a door that cannot
write it here (a kernel that needs a GPU) decides nothing, and the caller says so.
"""

from __future__ import annotations

from typing import Any, Callable

# Builds a fresh tiny pool; writes `loc_info` through the door under test; reads the bytes back.
MakePool = Callable[[], Any]
Write = Callable[[Any, Any], None]


class DoorDoesNotRun(RuntimeError):
    """The door could not write a bare loc here, so its handling of a KVWriteLoc is undecided."""


def _written(make_pool: MakePool, write: Write, loc_info: Any) -> Any:
    import torch

    pool = make_pool()
    write(pool, loc_info)
    return pool.get_key_buffer(0).contiguous().view(torch.uint8).clone()


def door_takes_write_loc(make_pool: MakePool, write: Write, write_loc: type) -> bool:
    """Whether the door writes `write_loc(loc)` exactly as it writes the bare loc. Raises
    DoorDoesNotRun when the bare loc itself does not write here."""
    import torch

    loc = torch.tensor([1, 2])
    try:
        expected = _written(make_pool, write, loc)
    except Exception as error:  # noqa: BLE001 - a foreign door may fail any way at all
        raise DoorDoesNotRun(f"a bare loc does not write here: {type(error).__name__}: {error}")
    try:
        written = _written(make_pool, write, write_loc(loc))
    except Exception:  # noqa: BLE001 - the door does not take a KVWriteLoc apart
        return False
    return torch.equal(written, expected)


def decided_by_running(
    run: Callable[[], bool], read_source: Callable[[], bool], decided_from_source: list[str]
) -> bool:
    """`run()`, or where the door does not run here `read_source()`, noting in
    `decided_from_source` why the source was read."""
    try:
        return run()
    except DoorDoesNotRun as why:
        decided_from_source.append(str(why))
        return read_source()
