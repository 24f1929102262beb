"""A release's unwrap helper (0.5.14 on: `unwrap_write_loc`, which a pool's write door calls to
take a KVWriteLoc apart), found by what it does. The name comes first; a release that renamed
it with every use still offers the function that, given a KVWriteLoc, returns a tuple that
starts with the loc it holds, and that is the one the harness probes for the era's arity."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

from backends.sglang_names import UNWRAP_HELPER as NAME


def unwrap_helper(pool_module: ModuleType, write_loc: type) -> Callable[[Any], tuple] | None:
    """`pool_module`'s unwrap helper: by its name, else its one-parameter function, defined
    there and naming `write_loc` in its source, that takes a KVWriteLoc(loc) apart into a tuple
    starting with that loc. None where no function does."""
    named = getattr(pool_module, NAME, None)
    if callable(named):
        return named
    import torch  # a CPU tensor only: the search runs where no device is

    loc = torch.arange(2)
    sample = write_loc(loc)
    for function in vars(pool_module).values():
        if not _takes_one_argument_here(function, pool_module) or write_loc.__name__ not in _source(
            function
        ):
            continue
        try:
            parts = function(sample)
        except Exception:  # noqa: BLE001 - a helper of another shape; it is not this one
            continue
        if isinstance(parts, tuple) and parts and parts[0] is loc:
            return function
    return None


def _takes_one_argument_here(function: Any, module: ModuleType) -> bool:
    if not inspect.isfunction(function) or function.__module__ != module.__name__:
        return False
    try:
        return len(inspect.signature(function).parameters) == 1
    except (TypeError, ValueError):
        return False


def _source(function: Any) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""
