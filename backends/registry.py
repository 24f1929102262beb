"""The backend registry: every call site the harness can drive, declared as data.

Each entry says where the backend runs natively, which pool kinds and modes it writes, which
eras it has call sites for, and its known divergences between eras (with reason and PR).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from backends import plain
from backends.context import WriteRequest

POOL_KINDS = ("mha", "mla", "swa_mha", "swa_mla")
ALL_ERAS = ("legacy", "kwarg", "bundled", "current")

WriteFn = Callable[[WriteRequest, str, str], None]


@dataclass(frozen=True)
class Backend:
    name: str
    device_type: str
    pool_kinds: tuple[str, ...]
    modes: tuple[str, ...]
    write: WriteFn
    eras: tuple[str, ...] = ALL_ERAS
    summary: str = ""
    divergences: tuple = field(default=())


BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend("plain", "any", POOL_KINDS, ("extend",), plain.write_set_kv_buffer,
                summary="each era's canonical set_kv_buffer call, no backend quirks"),
        Backend("plain_mla", "any", ("mla", "swa_mla"), ("extend",),
                plain.write_set_mla_kv_buffer,
                summary="each era's canonical set_mla_kv_buffer call (nope, rope)"),
    )
}


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}") from None
