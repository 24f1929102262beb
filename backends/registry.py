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
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterable, Mapping

import backends
from backends.entry import Backend, WriteFn, entries_of
from backends.focus import EXTEND_FOCUS

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
    value = environ.get(BACKEND_PATHS_VARIABLE, "")
    return tuple(Path(folder) for folder in value.split(os.pathsep) if folder)


def _package_modules() -> list[ModuleType]:
    own = __name__.rpartition(".")[2]
    return [
        importlib.import_module(f"{backends.__name__}.{info.name}")
        for info in pkgutil.iter_modules(backends.__path__)
        if info.name != own
    ]


def _import_file(path: Path) -> ModuleType:
    name = EXTRA_MODULE_PREFIX + path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "")).resolve() != path.resolve():
            raise ValueError(
                f"{BACKEND_PATHS_VARIABLE}: two backend modules named {path.stem!r} "
                f"({loaded.__file__} and {path})"
            )
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{BACKEND_PATHS_VARIABLE}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _folder_modules(folder: Path) -> list[ModuleType]:
    if not folder.is_dir():
        raise ValueError(f"{BACKEND_PATHS_VARIABLE}: {folder} is not a folder")
    return [
        _import_file(folder / f"{info.name}.py")
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name)
        if not info.ispkg
    ]


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


BACKEND_MODULES: tuple[ModuleType, ...] = backend_modules(backend_paths(os.environ))
BACKENDS: dict[str, Backend] = collect(BACKEND_MODULES)


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}") from None
