"""KINDS: every PoolKind record, collected from the modules of this package (as
backends/registry.py collects backends), in their declared order, validated once more as a set."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Callable

from pools.kinds.spec import PoolKind

_NOT_RECORDS = {"spec", "registry", "geometry_rules"}


def _collect() -> dict[str, PoolKind]:
    records: list[PoolKind] = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name in _NOT_RECORDS:
            continue
        loaded = importlib.import_module(f"{__package__}.{module.name}")
        records.extend(getattr(loaded, "RECORDS", ()))
    by_name: dict[str, PoolKind] = {}
    for record in sorted(records, key=lambda record: record.order):
        if record.name in by_name:
            raise ValueError(f"pool kind {record.name} is declared twice")
        by_name[record.name] = record
    orders = [record.order for record in by_name.values()]
    if len(set(orders)) != len(orders):
        raise ValueError("two pool kinds share an order")
    return by_name


KINDS: dict[str, PoolKind] = _collect()


def kinds_where(test: Callable[[PoolKind], bool]) -> tuple[str, ...]:
    """The names of the kinds a record test holds for, in KINDS' order."""
    return tuple(name for name, kind in KINDS.items() if test(kind))
