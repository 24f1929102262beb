"""Era detection from what a module offers, never from a version number."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

REQUIRED_NAMES = ("MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool")


def missing_names(module: Any) -> list[str]:
    return [name for name in REQUIRED_NAMES if not hasattr(module, name)]


def _fields(cls: Any) -> set[str]:
    if dataclasses.is_dataclass(cls):
        return {field.name for field in dataclasses.fields(cls)}
    return set(inspect.signature(cls).parameters)


def detect_era(module: Any) -> str:
    """legacy: no KVWriteLoc, no swa_loc=; kwarg: swa_loc= on SWAKVPool.set_kv_buffer;
    bundled: KVWriteLoc(loc, swa_loc); current: KVWriteLoc with full_loc (and physical)."""
    write_loc = getattr(module, "KVWriteLoc", None)
    if write_loc is not None:
        return "current" if "full_loc" in _fields(write_loc) else "bundled"
    swa_params = inspect.signature(module.SWAKVPool.set_kv_buffer).parameters
    return "kwarg" if "swa_loc" in swa_params else "legacy"
