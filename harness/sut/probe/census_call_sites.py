"""The call-site models the source census compares a release's write calls with, by backend.

Each backend module declares its model on its registry entry (`census=`, a
backends.call_shapes.CallSiteModel: the release files its call sites are in and, per era, the
call shapes its modelled call site makes); this module only names them by backend, in registry
order, for `harness.sut.probe.census`, which reads a release's source and compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from backends.call_shapes import ERA_NAMES, CallSiteModel, Shape
from backends.registry import BACKENDS, Backend

__all__ = ["BACKEND_MODELS", "BackendModel", "ERA_NAMES", "Shape", "backend_models"]


@dataclass(frozen=True)
class BackendModel:
    """A backend's call-site model under its registry name."""

    name: str
    sites: CallSiteModel

    @property
    def files(self) -> tuple[str, ...]:
        return self.sites.files

    @property
    def unmodelled_functions(self) -> dict[str, str]:
        return self.sites.unmodelled_functions

    def expected(self, era: str, missing: frozenset[str] = frozenset()) -> tuple[Shape, ...]:
        return self.sites.expected(era, missing)

    def unmodelled(self, era: str, missing: frozenset[str] = frozenset()) -> dict[Shape, str]:
        return self.sites.unmodelled(era, missing)


def backend_models(backends: Mapping[str, Backend]) -> dict[str, BackendModel]:
    """The models of the entries that declare one (plain and plain_mla have no release file)."""
    return {
        name: BackendModel(name, entry.census)
        for name, entry in backends.items()
        if entry.census is not None
    }


BACKEND_MODELS: dict[str, BackendModel] = backend_models(BACKENDS)
