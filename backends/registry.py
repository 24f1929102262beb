"""The backend registry: the entries the backend modules declare, collected in one table.

Each backend module registers its own entry beside its write function (backends.entry); this
module only fixes their order, which shows in `kvh matrix` and `kvh run`.
"""

from __future__ import annotations

from types import ModuleType

from backends import (
    aiter,
    ascend,
    context_parallel,
    fa3,
    flashinfer,
    flashinfer_mla,
    flashmla,
    intel_amx,
    musa,
    plain,
    torch_native,
    triton,
    trtllm_mha,
    trtllm_mla,
    xpu,
)
from backends.entry import Backend, WriteFn, entries_of
from backends.focus import EXTEND_FOCUS

__all__ = [
    "BACKENDS",
    "BACKEND_MODULES",
    "Backend",
    "EXTEND_FOCUS",
    "WriteFn",
    "backend_named",
    "collect",
]

BACKEND_MODULES: tuple[ModuleType, ...] = (
    plain,
    fa3,
    triton,
    flashinfer,
    trtllm_mha,
    aiter,
    xpu,
    musa,
    torch_native,
    intel_amx,
    ascend,
    flashinfer_mla,
    flashmla,
    trtllm_mla,
    context_parallel,
)


def collect(modules: tuple[ModuleType, ...]) -> dict[str, Backend]:
    """The entries `modules` register, by name, in module order; a name twice is an error."""
    table: dict[str, Backend] = {}
    for module in modules:
        for entry in entries_of(module):
            if entry.name in table:
                raise ValueError(f"backend {entry.name!r} registered twice ({module.__name__})")
            table[entry.name] = entry
    return table


BACKENDS: dict[str, Backend] = collect(BACKEND_MODULES)


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}") from None
