"""Store engines, declared as a registry that the CLI, the runner and the reports all read."""
from __future__ import annotations

from typing import Callable

from pools.engines.base import StoreEngine
from pools.engines.reference import ReferenceEngine
from pools.engines.torch_engine import TorchEngine

ENGINES: dict[str, Callable[[], StoreEngine]] = {
    "reference": ReferenceEngine,
    "torch": TorchEngine,
}


def make_engine(name: str) -> StoreEngine:
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}") from None
