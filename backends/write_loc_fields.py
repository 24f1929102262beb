"""A SUT's KVWriteLoc as its call sites build it: its fields in order, under the release's own
names. Call sites build KVWriteLoc(loc, swa_loc, full_loc) by position, so the order is the
contract and the names are the release's: the era is read from it (harness/sut/probe/detect.py)
and the call-site models name their keywords from it (backends/era_calls.py). No torch here: the
capability probe imports it where kvh has not loaded torch yet."""

from __future__ import annotations

import dataclasses
import functools
import inspect


@functools.cache  # a SUT's class does not change: read it once, not once per write
def write_loc_fields(cls: type) -> tuple[str, ...]:
    """`cls`'s fields in order (a dataclass's, else its constructor's parameters)."""
    if dataclasses.is_dataclass(cls):
        return tuple(item.name for item in dataclasses.fields(cls))
    return tuple(inspect.signature(cls).parameters)
