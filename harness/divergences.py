"""Known divergences between eras: differences that follow from a documented API change.

A candidate whose findings all fall within an applicable divergence's accepted oracles is
reported as a known divergence (with reason and PR), not as a failure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from harness.candidate import Candidate
from harness.findings import Finding
from scenarios.model import Scenario


@dataclass(frozen=True)
class KnownDivergence:
    name: str
    eras: tuple[str, ...]
    applies: Callable[[Scenario, Candidate], bool]
    accepts: frozenset[str]     # oracle names whose findings this divergence explains
    reason: str
    pr: str


def _narrowed_swa_write(scenario: Scenario, candidate: Candidate) -> bool:
    g = scenario.geometry
    return g.is_swa and any(
        forward.narrow is not None and forward.narrow < len(forward.loc)
        and set(scenario.layers_of(forward)) & set(g.swa_layer_ids)
        for forward in scenario.forwards)


DIVERGENCES: tuple[KnownDivergence, ...] = (
    KnownDivergence(
        "unsliced-swa-loc", ("kwarg", "bundled"), _narrowed_swa_write,
        frozenset({"exception", "bytes", "untouched", "caller_tensors"}),
        "swa_loc is translated once from the padded out_cache_loc; piecewise graphs narrow loc, "
        "and until KVWriteLoc.__post_init__ cut swa_loc to len(loc) the SWA write raised on the "
        "length mismatch (or, with one token, broadcast it over every padded slot)",
        "#29460"),
)


def explain(scenario: Scenario, candidate: Candidate, findings: list[Finding],
            extra: Iterable[KnownDivergence] = ()) -> Optional[KnownDivergence]:
    """The divergence that accounts for every finding, if one does."""
    for divergence in (*DIVERGENCES, *extra):
        if (candidate.era in divergence.eras and divergence.applies(scenario, candidate)
                and all(f.oracle in divergence.accepts for f in findings)):
            return divergence
    return None
