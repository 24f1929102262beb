"""The builtin SUT: an era's front-end classes bound to one store engine.

The result looks like an SGLang module (same class names, same constructor keywords), so the
harness drives builtin pools and foreign pools through one code path. Each kind's class is the one
its module in this folder registers against the kind's record (pools/kinds/pool_classes.py), as a
kind kept outside the tree registers its own; every module of the folder is imported here, so
registering is all a module does.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from pools.builtin.engines import make_engine
from pools.builtin.engines.base import StoreEngine
from pools.builtin.eras import era_named
from pools.kinds.pool_classes import BUILTIN_POOLS, ERA_FRONT, STORE_ENGINE, registered_classes
from pools.kinds.registry import KINDS

# The folder's own modules, each of which registers the kinds it implements; not its packages
# (engines/ imports Triton's kernels only on first use).
for _module in pkgutil.iter_modules([str(Path(__file__).parent)]):
    if not _module.ispkg:
        importlib.import_module(f"{__package__}.{_module.name}")


def builtin_module(
    era_name: str, engine_name: str, engine: Optional[StoreEngine] = None
) -> SimpleNamespace:
    """The era's pools of every kind over the store engine named (or over `engine`, a caller's
    own: a test's faulty engine, under the name given)."""
    source = era_named(era_name).module
    names = {
        ERA_FRONT: source,
        STORE_ENGINE: engine or make_engine(engine_name),
        "name": f"builtin:{era_name}:{engine_name}",
        "version": "builtin",
        # Its pools hold no state a run leaves behind that the harness cannot check, so one is
        # built per geometry and reused (harness/run/pool_cache.py REUSE_POOLS).
        "reuse_pools": True,
    }
    for optional in ("KVWriteLoc", "unwrap_write_loc"):
        if hasattr(source, optional):
            names[optional] = getattr(source, optional)
    names.update(registered_classes(BUILTIN_POOLS, names, KINDS))
    return SimpleNamespace(**names)
