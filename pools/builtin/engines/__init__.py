"""Store engines, declared as a registry that the CLI, the runner and the reports all read."""

from __future__ import annotations

from typing import Callable

from pools.builtin.engines.base import StoreEngine
from pools.builtin.engines.reference import ReferenceEngine
from pools.builtin.engines.torch_engine import TorchEngine


def _triton_engine() -> StoreEngine:
    # Imported on first use: importing the kernels picks compiled or interpreted mode
    # (pools/builtin/engines/triton_mode.py), and a plain `kvh run` need not pay for importing
    # triton.
    from pools.builtin.engines.triton_engine import TritonEngine

    return TritonEngine()


ENGINES: dict[str, Callable[[], StoreEngine]] = {
    "reference": ReferenceEngine,
    "torch": TorchEngine,
    "triton": _triton_engine,
}


def make_engine(name: str) -> StoreEngine:
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}") from None
