"""Known divergences between eras: differences that follow from a documented API change.

A candidate whose findings all fall within an applicable divergence's accepted oracles is
reported as a known divergence (with reason and PR), not as a failure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Protocol

from pools.dtypes import dtype_spec
from scenarios.model import Scenario


class Candidate(Protocol):
    """What a divergence reads of the harness's candidate (harness/candidate.py)."""
    sut: str
    era: str
    mode: str


class Finding(Protocol):
    """What a divergence reads of a finding (harness/findings.py)."""
    oracle: str
    message: str


@dataclass(frozen=True)
class KnownDivergence:
    name: str
    eras: tuple[str, ...]
    applies: Callable[[Scenario, Candidate], bool]
    accepts: frozenset[str]     # oracle names whose findings this divergence explains
    reason: str
    pr: str
    message: str = ""           # when set, every finding's message must match this regex

    def explains(self, scenario: Scenario, candidate: Candidate, findings: list[Finding]) -> bool:
        return (candidate.era in self.eras and self.applies(scenario, candidate)
                and all(f.oracle in self.accepts for f in findings)
                and all(re.search(self.message, f.message) for f in findings if self.message))


def _real_sglang_mla(scenario: Scenario, candidate: Candidate) -> bool:
    return candidate.sut.startswith("sglang") and scenario.geometry.is_mla


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
    KnownDivergence(
        "mla-nope-rope-no-unwrap", ("bundled",), _real_sglang_mla, frozenset({"exception"}),
        "SGLang 0.5.14's MLATokenToKVPool.set_mla_kv_buffer does not unwrap KVWriteLoc (its "
        "set_kv_buffer does): the review of PR #27695 found the MLA pools missing the unwrap, "
        "and the release shipped with this door still missing it",
        "#27695", message=r"'KVWriteLoc' object has no attribute"),
)


def _scaled(scenario: Scenario) -> bool:
    return any(scale.kind != "none" and scale.value != 1.0
               for scale in (scenario.k_scale, scenario.v_scale))


def _fp8_scaled(mode: str) -> Callable[[Scenario, Candidate], bool]:
    """A scaled write into an fp8 cache in `mode`: where passing the scales or not shows."""
    return lambda scenario, candidate: (candidate.mode == mode and _scaled(scenario)
                                        and dtype_spec(scenario.geometry.dtype).is_fp8)


# Per-backend divergences between eras; backends.registry attaches them to their entries.
BACKEND_DIVERGENCES: dict[str, tuple[KnownDivergence, ...]] = {
    "aiter": (KnownDivergence(
        "aiter-decode-descales", ("current",), _fp8_scaled("decode"),
        frozenset({"bytes", "caller_tensors"}),
        "with an fp8 cache, aiter's decode set_kv_buffer passed no scales in 0.5.12-0.5.14 (extend "
        "passed k_descale/v_descale); 0.5.23 passes the descales in decode too, so the pool divides "
        "k and v (in place) where it used to only cast; no PR names the change", ""),),
    "intel_amx": (KnownDivergence(
        "intel-amx-fp8-scale-float", ("current",), _fp8_scaled("extend"),
        frozenset({"bytes", "caller_tensors"}),
        "intel_amx's extend passed no scales until 0.5.14; 0.5.23 passes layer.k_scale_float and "
        "v_scale_float when the key buffer is fp8, so the pool divides k and v (in place) where it "
        "used to only cast; no PR names the change", ""),),
}


def explain(scenario: Scenario, candidate: Candidate, findings: list[Finding],
            extra: Iterable[KnownDivergence] = ()) -> Optional[KnownDivergence]:
    """The divergence that accounts for every finding, if one does."""
    for divergence in (*DIVERGENCES, *extra):
        if divergence.explains(scenario, candidate, findings):
            return divergence
    return None
