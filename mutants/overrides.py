"""Faulty call sites: a mutant module's `BACKEND_OVERRIDES = {backend name: write function}`.

While a mutant runs, each named registry entry is swapped for a copy whose write dispatches on
the SUT module the request carries: the mutant's module gets the faulty call site, every other
module (the baseline's builtin pools) the real one. The registry is restored afterwards.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace
from types import ModuleType
from typing import Iterator

from backends.registry import BACKENDS, WriteFn


def _dispatch(module: ModuleType, faulty: WriteFn, real: WriteFn) -> WriteFn:
    def write(req, era: str, mode: str) -> None:
        (faulty if req.api is module else real)(req, era, mode)
    return write


@contextlib.contextmanager
def call_site_overrides(module: ModuleType) -> Iterator[tuple[str, ...]]:
    """Install the module's faulty call sites; yields the backend names overridden."""
    overrides = dict(getattr(module, "BACKEND_OVERRIDES", {}))
    unknown = [name for name in overrides if name not in BACKENDS]
    if unknown:
        raise ValueError(f"{module.__name__}: BACKEND_OVERRIDES names unknown backend {unknown[0]!r}")
    saved = {name: BACKENDS[name] for name in overrides}
    try:
        for name, faulty in overrides.items():
            BACKENDS[name] = replace(saved[name], write=_dispatch(module, faulty, saved[name].write))
        yield tuple(overrides)
    finally:
        BACKENDS.update(saved)
