"""The backend registry: the entries the backend modules declare, found and put in their order.

Each backend module registers its own entries beside its write functions (backends.entry); this
module only finds and orders them. It takes every module of the `backends` package, and every
module of each folder named in the environment variable KVH_BACKEND_PATHS (folders separated by
os.pathsep: a backend kept outside this tree, or a test's synthetic one), that registers an entry.
Entries are sorted by their declared `order`, which shows in `kvh matrix` and `kvh run`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Iterable, Mapping

import backends
from backends.entry import Backend, WriteFn, entries_of
from backends.focus import EXTEND_FOCUS
from pools.kinds.registry import KINDS
from pools.kinds.spec import PoolKind
from pools.plugin_folders import folder_modules, folders_named

__all__ = [
    "BACKENDS",
    "BACKEND_MODULES",
    "BACKEND_PATHS_VARIABLE",
    "Backend",
    "EXTEND_FOCUS",
    "WriteFn",
    "backend_modules",
    "backend_named",
    "backend_paths",
    "collect",
]

BACKEND_PATHS_VARIABLE = "KVH_BACKEND_PATHS"
# A module found on KVH_BACKEND_PATHS is imported under this prefix, so that its name cannot
# shadow an installed package (a folder's `triton.py` is not `triton`).
EXTRA_MODULE_PREFIX = "kvh_backend_path_"


def backend_paths(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The extra folders `environ` names in KVH_BACKEND_PATHS, in the order given."""
    return folders_named(BACKEND_PATHS_VARIABLE, environ)


def _package_modules() -> list[ModuleType]:
    own = __name__.rpartition(".")[2]
    return [
        importlib.import_module(f"{backends.__name__}.{info.name}")
        for info in pkgutil.iter_modules(backends.__path__)
        if info.name != own
    ]


def _folder_modules(folder: Path) -> list[ModuleType]:
    return folder_modules(folder, BACKEND_PATHS_VARIABLE, EXTRA_MODULE_PREFIX)


def backend_modules(paths: Iterable[Path] = ()) -> tuple[ModuleType, ...]:
    """Every module that registers an entry: of the `backends` package, then of each folder in
    `paths` (its top-level `.py` files)."""
    found = _package_modules() + [m for folder in paths for m in _folder_modules(Path(folder))]
    return tuple(module for module in found if entries_of(module))


def collect(modules: Iterable[ModuleType]) -> dict[str, Backend]:
    """The entries `modules` register, by name, sorted by their declared order; a name or an
    order declared twice is an error."""
    table: dict[str, Backend] = {}
    orders: dict[int, Backend] = {}
    for module in modules:
        for entry in entries_of(module):
            if entry.name in table:
                raise ValueError(f"backend {entry.name!r} registered twice ({module.__name__})")
            if entry.order in orders:
                raise ValueError(
                    f"backends {orders[entry.order].name!r} and {entry.name!r} both declare "
                    f"order {entry.order}"
                )
            table[entry.name], orders[entry.order] = entry, entry
    return {entry.name: entry for entry in sorted(table.values(), key=lambda e: e.order)}


def with_kinds_that_name_them(
    table: dict[str, Backend], kinds: Iterable[PoolKind]
) -> dict[str, Backend]:
    """Each backend with the kinds whose records name it (PoolKind.backends: a kind declared
    outside this tree, which no entry can name), in its value oracle's scope too where it has one
    and the kind's values are not judged elsewhere. A kind naming no registered backend is an
    error."""
    table = dict(table)
    for kind in kinds:
        for name in kind.backends:
            if name not in table:
                raise ValueError(f"pool kind {kind.name} names backend {name!r}, which is not one")
            entry = table[name]
            scope = entry.value_scope
            if scope is not None and not kind.values_judged_elsewhere:
                scope = replace(scope, pools=scope.pools + (kind.name,))
            table[name] = replace(
                entry, pool_kinds=entry.pool_kinds + (kind.name,), value_scope=scope
            )
    return table


BACKEND_MODULES: tuple[ModuleType, ...] = backend_modules(backend_paths(os.environ))
BACKENDS: dict[str, Backend] = with_kinds_that_name_them(collect(BACKEND_MODULES), KINDS.values())


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}") from None
