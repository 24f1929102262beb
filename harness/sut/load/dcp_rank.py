"""A release's MLA pool on a decode-context-parallel rank, behind the SUT protocol's constructor
keywords (dcp_size, dcp_rank).

0.5.23's MLATokenToKVPool reads its DCP group when it writes, from the runtime's parallel context
(get_parallel().attn_dcp_size and attn_dcp_rank, dcp_enabled), which a server publishes at start
and the loader pins off (pin_dcp_off). A rank's pool here states its group with
the context's own scoped override around each write door, as a server on that rank has it
published; the pool's code, its KVWriteLoc handling and its store are the release's. Offered
where the context reads a DCP group's fields (the loader's pin wrote them): a release without
them keeps its class, and the capability mla_dcp_rank reads the keywords' absence. Whether the
override works is not tried here: a context that reads the group but cannot state it fails the
rank's writes, a finding against the release, where a trial would have hidden it as a
combination that cannot apply.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any, Callable, Optional

from backends.sglang_names import DCP_GROUP_FIELDS, PARALLEL_CONTEXT

# The doors a backend writes an MLA pool through.
DOORS = ("set_kv_buffer", "set_mla_kv_buffer")


def dcp_group(size: int, rank: int) -> dict[str, Any]:
    """The parallel context's values for rank `rank` of `size` (DCP_GROUP_FIELDS' order)."""
    return dict(zip(DCP_GROUP_FIELDS, (size > 1, size, rank)))


def _parallel_context() -> Optional[Any]:
    """The release's parallel context; None where it has none (older releases)."""
    module_name, function = PARALLEL_CONTEXT
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, function, lambda: None)()


def pin_dcp_off() -> bool:
    """Pin the context's DCP group to one rank, as no server published one here (0.5.23's MLA
    write reads it); whether the release has a context to pin."""
    parallel = _parallel_context()
    if not hasattr(parallel, "override_permanently"):
        return False
    parallel.override_permanently(**dcp_group(1, 0))
    return True


def _dcp_context() -> Optional[Any]:
    """The release's parallel context, where it reads every field of a DCP group; None otherwise
    (no context, or a field it does not know)."""
    parallel = _parallel_context()
    try:
        for name in DCP_GROUP_FIELDS:
            getattr(parallel, name)
    except Exception:  # noqa: BLE001 - a context without the group offers no DCP rank here
        return None
    return parallel


def as_dcp_rank_pools(cls: type) -> type:
    """`cls` taking dcp_size and dcp_rank too, or `cls` itself where the release cannot state a
    DCP group. A pool of one rank (the default) runs exactly as `cls`."""
    parallel = _dcp_context()
    if parallel is None:
        return cls

    def __init__(self: Any, *args: Any, dcp_size: int = 1, dcp_rank: int = 0, **kw: Any) -> None:
        cls.__init__(self, *args, **kw)
        self.kvh_dcp_group = dcp_group(dcp_size, dcp_rank) if dcp_size > 1 else None

    __init__.__signature__ = _with_keywords(cls, ("dcp_size", 1), ("dcp_rank", 0))  # type: ignore[attr-defined]

    def on_rank(door: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(door)
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self.kvh_dcp_group is None:
                return door(self, *args, **kwargs)
            with parallel.override(**self.kvh_dcp_group):
                return door(self, *args, **kwargs)

        return write

    members = {name: on_rank(getattr(cls, name)) for name in DOORS if hasattr(cls, name)}
    return type(
        cls.__name__,
        (cls,),
        {"__init__": __init__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
         **members},
    )  # fmt: skip


def _with_keywords(cls: type, *keywords: tuple[str, Any]) -> inspect.Signature:
    """The signature of cls.__init__ with keyword-only parameters added (before any **kwargs),
    so what reads the class's parameters reads the release's and these."""
    signature = inspect.signature(cls.__init__)
    params = list(signature.parameters.values())
    tail = [p for p in params if p.kind is p.VAR_KEYWORD]
    head = [p for p in params if p.kind is not p.VAR_KEYWORD]
    added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d) for n, d in keywords]
    return signature.replace(parameters=head + added + tail)
