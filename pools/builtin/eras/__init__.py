"""The four generations of SGLang's KV write API, as a registry."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from pools.builtin.eras import bundled, current, kwarg, legacy


@dataclass(frozen=True)
class Era:
    name: str
    release: str
    pr: str
    summary: str
    module: ModuleType


ERAS: dict[str, Era] = {
    era.name: era
    for era in (
        Era("legacy", "0.5.12", "", "bare loc; SWAKVPool translates SWA slots itself", legacy),
        Era("kwarg", "0.5.13", "#27617", "swa_loc= keyword, asserted for SWA layers", kwarg),
        Era("bundled", "0.5.14", "#27695", "KVWriteLoc(loc, swa_loc)", bundled),
        Era("current", "0.5.23", "#29460", "KVWriteLoc(loc, swa_loc, full_loc, physical)", current),
    )
}


def era_named(name: str) -> Era:
    try:
        return ERAS[name]
    except KeyError:
        raise ValueError(f"unknown era {name!r}; choose from {', '.join(ERAS)}") from None
