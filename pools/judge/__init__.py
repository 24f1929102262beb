"""The judge: an independent implementation of SGLang's KV pool API, per era, on CPU.

It shares no pool code with the builtin pools it judges (pools/builtin, forbidden to it whole by
an import-linter contract in pyproject.toml, so a new storage there cannot slip past): its own
division, casts (NumPy bit arithmetic), FP4 quantiser, per-token write loop, layouts, era doors,
SWA routing and translation. A bug shared by the baseline and a candidate is one no
comparison can see; docs/judge.md says how each rule was checked.

What it does share, openly, is SGLang's API surface in pools.write_loc: the per-era KVWriteLoc
dataclasses (for_batch, for_layer, the __post_init__ cut) and unwrap_write_loc, which the builtin
eras and the mutant bases import too. A slip there would be invisible to the differential, so
tests/test_write_loc_sglang.py compares that module with the installed SGLang's own on the same
inputs instead. (And pools.dtypes, the dtype-name table.)

Each kind's judge is the class its module here registers against the kind's record
(pools/kinds/pool_classes.py), as a kind kept outside the tree registers its own; every module of
this package is imported here, so registering is all a module does.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import SimpleNamespace

from pools.judge.eras import ERA_FRONTS
from pools.kinds.pool_classes import ERA_FRONT, JUDGE_POOLS, registered_classes
from pools.kinds.registry import KINDS

for _module in pkgutil.iter_modules([str(Path(__file__).parent)]):
    importlib.import_module(f"{__name__}.{_module.name}")


def judge_module(era: str) -> SimpleNamespace:
    """SGLang's pool names for `era` (legacy, kwarg, bundled, current), implemented by the judge."""
    try:
        front = ERA_FRONTS[era]
    except KeyError:
        raise ValueError(f"unknown era {era!r}; choose from {', '.join(ERA_FRONTS)}") from None
    names = {
        ERA_FRONT: front,
        "name": f"judge:{era}",
        "version": "judge",
        "reuse_pools": True,  # one pool per geometry, reused (harness/run/pool_cache.py)
    }
    if front.write_loc is not None:
        names["KVWriteLoc"] = type("KVWriteLoc", (front.write_loc,), {})
        names["unwrap_write_loc"] = front.unwrap
    names.update(registered_classes(JUDGE_POOLS, names, KINDS))
    return SimpleNamespace(**names)
