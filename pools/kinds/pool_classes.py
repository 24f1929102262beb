"""The builtin pool and the judge of a kind declared outside this tree (pools/kinds/registry.py
KVH_KIND_PATHS), each registered against the kind's name in its own module, as a backend
registers its entry. A kind of this tree is built where its family's are (pools/builtin/sut.py,
pools/judge/); a registered one is added to each era's builtin and judge modules under its
record's SGLang class name.

A factory takes the module being built (its SGLang names so far: the era's MHATokenToKVPool, its
SWAKVPool, ...) and returns the kind's class, so it may build over the era's doors. The judge's
must share no code with the builtin's, as the judge's own pools do not.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Mapping

from pools.kinds.spec import PoolKind

PoolFactory = Callable[[SimpleNamespace], type]

BUILTIN_POOLS: dict[str, PoolFactory] = {}
JUDGE_POOLS: dict[str, PoolFactory] = {}


def _registering(table: dict[str, PoolFactory], role: str, kind: str):
    def register(factory: PoolFactory) -> PoolFactory:
        if kind in table:
            raise ValueError(f"pool kind {kind}: a {role} pool is registered twice")
        table[kind] = factory
        return factory

    return register


def builtin_pool(kind: str) -> Callable[[PoolFactory], PoolFactory]:
    """Registers the decorated factory as kind `kind`'s builtin pool."""
    return _registering(BUILTIN_POOLS, "builtin", kind)


def judge_pool(kind: str) -> Callable[[PoolFactory], PoolFactory]:
    """Registers the decorated factory as kind `kind`'s judge."""
    return _registering(JUDGE_POOLS, "judge", kind)


def registered_classes(
    table: dict[str, PoolFactory], names: dict, kinds: Mapping[str, PoolKind]
) -> dict[str, type]:
    """Each registered kind's class, under its record's SGLang class name (`kinds`: KINDS, passed
    in because a kind folder imports this module while KINDS is being collected), built over
    the module `names` holds so far."""
    module = SimpleNamespace(**names)
    return {kinds[kind].sglang_class: factory(module) for kind, factory in table.items()}
