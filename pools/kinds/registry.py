"""KINDS: every PoolKind record, collected from the modules of this package (as
backends/registry.py collects backends), then from each folder named in the environment variable
KVH_KIND_PATHS (folders separated by os.pathsep: a kind kept outside this tree, or a test's
synthetic one), in their declared order, validated once more as a set.

Such a folder holds the kind's record module (RECORDS) and the modules that register its builtin
pool and its judge against its name (pools/kinds/pool_classes.py); every module of the folder is
imported, so registering is all they need do.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterable

from pools.kinds.spec import PoolKind
from pools.plugin_folders import folder_modules, folders_named

KIND_PATHS_VARIABLE = "KVH_KIND_PATHS"
EXTRA_MODULE_PREFIX = "kvh_kind_path_"
_NOT_RECORDS = {
    "spec",
    "registry",
    "geometry_rules",
    "pool_classes",
    "fixed_geometry",
    "layer_parts",
    "landing",
    "layer_buffers",
    "slot_rows",
}


def _package_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{__package__}.{module.name}")
        for module in pkgutil.iter_modules([str(Path(__file__).parent)])
        if module.name not in _NOT_RECORDS
    ]


def collect(modules: Iterable[ModuleType]) -> dict[str, PoolKind]:
    """The records `modules` declare (RECORDS), by name, in their declared order; a name or an
    order declared twice is an error."""
    records = [record for module in modules for record in getattr(module, "RECORDS", ())]
    by_name: dict[str, PoolKind] = {}
    for record in sorted(records, key=lambda record: record.order):
        if record.name in by_name:
            raise ValueError(f"pool kind {record.name} is declared twice")
        by_name[record.name] = record
    orders = [record.order for record in by_name.values()]
    if len(set(orders)) != len(orders):
        raise ValueError("two pool kinds share an order")
    return by_name


KIND_PATHS: tuple[Path, ...] = folders_named(KIND_PATHS_VARIABLE, os.environ)
KINDS: dict[str, PoolKind] = collect(
    _package_modules()
    + [
        module
        for folder in KIND_PATHS
        for module in folder_modules(folder, KIND_PATHS_VARIABLE, EXTRA_MODULE_PREFIX)
    ]
)


def kinds_where(test: Callable[[PoolKind], bool]) -> tuple[str, ...]:
    """The names of the kinds a record test holds for, in KINDS' order."""
    return tuple(name for name, kind in KINDS.items() if test(kind))
