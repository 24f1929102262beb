"""Each kind's builtin pool and judge, registered against the kind's record in the module that
implements it (pools/builtin/, pools/judge/, or a folder on KVH_KIND_PATHS for a kind kept
outside this tree), as a backend registers its entry. No table elsewhere wires a kind to its
classes: an era's builtin and judge modules are what the registered factories build.

A factory takes the module being built (its SGLang names so far: the era's MHATokenToKVPool, its
SWAKVPool, ..., and the era's front-ends under ERA_FRONT) and returns the kind's class, or a
mapping of SGLang class names to classes (the kind's class and the sub-pool classes it builds on,
such as DSATokenToKVPool), or {} where the era cannot have the kind. Factories run in the kinds'
order (PoolKind.order), so a kind may build over a class an earlier kind made; kinds that share
an SGLang class (the SWA kinds' SWAKVPool) share one factory. The judge's factories must share no
code with the builtin's, as the judge's own pools do not.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Mapping, Union

from pools.kinds.spec import PoolKind

PoolFactory = Callable[[SimpleNamespace], Union[type, Mapping[str, type]]]

BUILTIN_POOLS: dict[str, PoolFactory] = {}
JUDGE_POOLS: dict[str, PoolFactory] = {}

# The module attribute under which a factory finds the era's own front-ends (pools/builtin/eras'
# module, or the judge's EraFront) and, for the builtin, the store engine: what the era's base
# classes are built from, for factories that build over them.
ERA_FRONT, STORE_ENGINE = "era_front", "store_engine"


def _registering(table: dict[str, PoolFactory], role: str, kinds: tuple[Union[str, PoolKind], ...]):
    names = [kind.name if isinstance(kind, PoolKind) else kind for kind in kinds]

    def register(factory: PoolFactory) -> PoolFactory:
        for kind in names:
            if kind in table:
                raise ValueError(f"pool kind {kind}: a {role} pool is registered twice")
            table[kind] = factory
        return factory

    return register


def builtin_pool(*kinds: Union[str, PoolKind]) -> Callable[[PoolFactory], PoolFactory]:
    """Registers the decorated factory as the builtin pool of `kinds` (records or names)."""
    return _registering(BUILTIN_POOLS, "builtin", kinds)


def judge_pool(*kinds: Union[str, PoolKind]) -> Callable[[PoolFactory], PoolFactory]:
    """Registers the decorated factory as the judge of `kinds` (records or names)."""
    return _registering(JUDGE_POOLS, "judge", kinds)


def registered_classes(
    table: dict[str, PoolFactory], names: dict, kinds: Mapping[str, PoolKind]
) -> dict[str, type]:
    """Every registered factory's classes, by SGLang class name, each factory run once in the
    kinds' order over the module `names` holds with what the factories before it made (`kinds`:
    KINDS, passed in because a kind folder imports this module while KINDS is being collected)."""
    made: dict[str, type] = {}
    ran: set[int] = set()
    for kind in sorted(kinds.values(), key=lambda record: record.order):
        factory = table.get(kind.name)
        if factory is None or id(factory) in ran:
            continue
        ran.add(id(factory))
        result = factory(SimpleNamespace(**names, **made))
        made.update(result if isinstance(result, Mapping) else {kind.sglang_class: result})
    return made
