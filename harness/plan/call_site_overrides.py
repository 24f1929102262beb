"""Faulty call sites: a mutant module's `BACKEND_OVERRIDES = {backend name: write function}`.

A mutant run gets its own backend table (RunOptions.backend_table): a copy of the registry in
which each named entry's write dispatches on the SUT module the request carries, so the mutant's
module gets the faulty call site and every other module (the baseline's builtin pools) the real
one. The registry itself is never changed.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Mapping

from backends.registry import Backend, WriteFn


def _dispatch(module: ModuleType, faulty: WriteFn, real: WriteFn) -> WriteFn:
    def write(req, era: str, mode: str) -> None:
        (faulty if req.api is module else real)(req, era, mode)

    return write


def with_call_site_overrides(
    module: ModuleType, table: Mapping[str, Backend]
) -> tuple[dict[str, Backend], tuple[str, ...]]:
    """`table` with the module's faulty call sites, and the backend names they override."""
    overrides = dict(getattr(module, "BACKEND_OVERRIDES", {}))
    unknown = [name for name in overrides if name not in table]
    if unknown:
        raise ValueError(
            f"{module.__name__}: BACKEND_OVERRIDES names unknown backend {unknown[0]!r}"
        )
    overridden = dict(table)
    for name, faulty in overrides.items():
        overridden[name] = replace(table[name], write=_dispatch(module, faulty, table[name].write))
    return overridden, tuple(overrides)
