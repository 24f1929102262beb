"""Known divergences: each difference between an era's call site and the ground truth (the oldest
era's), declared with exactly what it explains.

A declaration names the eras it holds in, its kind (`fixed-later`: the older eras had a bug a later
one fixed; `changed`: a later era changed behaviour on purpose), when it applies (scenario, mode),
the forwards and, within each, the layers it affects, the oracles and the message pattern of the
findings it explains, the doors an explained exception comes through, and its PR, or, when no PR
names the change, the evidence it rests on. A finding outside any part of that is not explained.
An exception stops a run, so an explained exception is raised at the first declared place only.

`capability` marks a SUT's own difference from its era's model (a bug a release shipped with),
keyed on a probed capability (harness/sut/capabilities.py), never on a version: it explains a
candidate whose SUT probes so against its era's baseline, never an era of the model.
harness/verdict.py reads these; docs/verdict.md says how.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

from pools.dtypes import dtype_spec
from scenarios.model import Scenario

FIXED_LATER, CHANGED = "fixed-later", "changed"
KINDS = (FIXED_LATER, CHANGED)

Applies = Callable[[Scenario, str], bool]  # (scenario, mode)
Forwards = Callable[[Scenario], frozenset[int]]  # the forward indices affected
Layers = Callable[[Scenario, int], frozenset[int]]  # (scenario, forward) -> layer ids affected


class Finding(Protocol):
    """What a divergence reads of a finding (harness/findings.py)."""

    oracle: str
    message: str
    forward: Optional[int]
    layer: Optional[int]
    door: Optional[str]


@dataclass(frozen=True)
class KnownDivergence:
    name: str
    eras: tuple[str, ...]
    kind: str
    applies: Applies
    forwards: Forwards
    layers: Layers
    oracles: frozenset[str]
    message: str  # regex every explained finding's message matches
    reason: str
    pr: str = ""
    evidence: str = ""  # what the declaration rests on when no PR names the change
    doors: tuple[str, ...] = ()  # an explained exception came through one of these pool methods
    # (Capabilities field, value): a SUT that probes so has this difference from its era's model
    capability: Optional[tuple[str, object]] = None

    @property
    def accepts(self) -> frozenset[str]:
        """The oracles (the name backends.entry.Backend.describe reads)."""
        return self.oracles

    @property
    def source(self) -> str:
        """Where a reader checks it: the PR, else the evidence."""
        return self.pr or f"no PR: {self.evidence}"

    def places(self, scenario: Scenario) -> list[tuple[int, int]]:
        """Every (forward, layer) affected, in write order."""
        return [
            (forward, layer)
            for forward in sorted(self.forwards(scenario))
            for layer in scenario.layers_of(scenario.forwards[forward])
            if layer in self.layers(scenario, forward)
        ]

    def covers(self, scenario: Scenario, finding: Finding) -> bool:
        """Whether `finding` lies within the declaration: oracle, message, forward, layer, door."""
        if finding.oracle not in self.oracles or not re.search(self.message, finding.message):
            return False
        places = self.places(scenario)
        if finding.oracle == "exception":
            return (
                bool(places)
                and (finding.forward, finding.layer) == places[0]
                and (not self.doors or finding.door in self.doors)
            )
        if finding.forward is None:  # a slot no token writes: no forward wrote it
            return finding.oracle == "untouched" and any(
                layer == finding.layer for _, layer in places
            )
        return (finding.forward, finding.layer) in places

    def explains(self, scenario: Scenario, mode: str, findings: list) -> bool:
        return (
            bool(findings)
            and self.applies(scenario, mode)
            and all(self.covers(scenario, finding) for finding in findings)
        )

    def describe(self) -> dict:
        return {
            "name": self.name,
            "eras": list(self.eras),
            "kind": self.kind,
            "oracles": sorted(self.oracles),
            "message": self.message,
            "doors": list(self.doors),
            "capability": "=".join(map(str, self.capability)) if self.capability else "",
            "reason": self.reason,
            "pr": self.pr,
            "evidence": self.evidence,
        }


def _every_forward(scenario: Scenario) -> frozenset[int]:
    return frozenset(range(len(scenario.forwards)))


def _every_layer(scenario: Scenario, forward: int) -> frozenset[int]:
    return frozenset(range(scenario.geometry.layer_num))


def _first_forward(scenario: Scenario) -> frozenset[int]:
    return frozenset({0}) if scenario.forwards else frozenset()


def _narrowed(forward) -> bool:
    return forward.narrow is not None and forward.narrow < len(forward.loc)


def _narrowed_swa_forwards(scenario: Scenario) -> frozenset[int]:
    swa = set(scenario.geometry.swa_layer_ids)
    return frozenset(
        index
        for index, forward in enumerate(scenario.forwards)
        if _narrowed(forward) and swa & set(scenario.layers_of(forward))
    )


def _swa_layers(scenario: Scenario, forward: int) -> frozenset[int]:
    return frozenset(scenario.geometry.swa_layer_ids)


def _narrowed_swa_write(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.is_swa and bool(_narrowed_swa_forwards(scenario))


def _mla(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.is_mla


DIVERGENCES: tuple[KnownDivergence, ...] = (
    KnownDivergence(
        "unsliced-swa-loc",
        ("kwarg", "bundled"),
        FIXED_LATER,
        _narrowed_swa_write,
        _narrowed_swa_forwards,
        _swa_layers,
        frozenset({"exception"}),
        r"slots for \d+ rows|shape mismatch|out of bounds for (dimension|axis) 0",
        "swa_loc is translated once from the padded out_cache_loc; piecewise graphs narrow loc, "
        "and until KVWriteLoc.__post_init__ cut swa_loc to len(loc) the SWA write of a narrowed "
        "forward raised on the length mismatch: the model raises at the first SWA layer of the "
        "first narrowed forward, and nothing after it runs",
        pr="#29460",
        doors=("set_kv_buffer", "set_mla_kv_buffer"),
    ),
    KnownDivergence(
        "mla-nope-rope-no-unwrap",
        ("bundled",),
        FIXED_LATER,
        _mla,
        _first_forward,
        _every_layer,
        frozenset({"exception"}),
        r"'KVWriteLoc' object has no attribute",
        "MLATokenToKVPool.set_mla_kv_buffer does not unwrap KVWriteLoc (its set_kv_buffer does; "
        "SGLang 0.5.14 shipped so): the review of PR #27695 found the MLA pools missing the "
        "unwrap; the first MLA write raises. Applies to any SUT whose MLA doors probe as not "
        "unwrapping",
        pr="#27695",
        doors=("set_mla_kv_buffer",),
        capability=("mla_unwraps_write_loc", False),
    ),
)


def _scaled(scenario: Scenario) -> bool:
    return any(
        scale.kind != "none" and scale.value != 1.0
        for scale in (scenario.k_scale, scenario.v_scale)
    )


def _only_5d(applies: Applies) -> Applies:
    return lambda scenario, mode: (
        scenario.geometry.pool == "mha_aiter5d" and applies(scenario, mode)
    )


def _not_5d(applies: Applies) -> Applies:
    return lambda scenario, mode: (
        scenario.geometry.pool != "mha_aiter5d" and applies(scenario, mode)
    )


def _fp8_scaled(mode: str) -> Applies:
    """A scaled MHA write into an fp8 cache in `mode`: where passing the scales or not shows
    (MLA writes take no scales in any era)."""
    return lambda scenario, actual: (
        actual == mode
        and _scaled(scenario)
        and not scenario.geometry.is_mla
        and dtype_spec(scenario.geometry.dtype).is_fp8
    )


_SCALED_BYTES = r"written bytes differ|caller tensor"

# Per-backend divergences between eras; each backend module attaches its own to its entry.
BACKEND_DIVERGENCES: dict[str, tuple[KnownDivergence, ...]] = {
    "aiter": (
        KnownDivergence(
            "aiter-decode-descales",
            ("current",),
            CHANGED,
            _not_5d(_fp8_scaled("decode")),
            _every_forward,
            _every_layer,
            frozenset({"bytes", "caller_tensors"}),
            _SCALED_BYTES,
            "with an fp8 cache, aiter's decode set_kv_buffer passed no scales in 0.5.12-0.5.14 "
            "(extend passed k_descale/v_descale); 0.5.23 passes the descales in decode too, so "
            "the pool divides k and v (in place) where it used to only cast",
            evidence="diff of the 0.5.14 and 0.5.23 wheels, python/sglang/srt/layers/attention/"
            "aiter_backend.py forward_decode: set_kv_buffer gains k_descale, v_descale; no PR "
            "names the change",
        ),
        KnownDivergence(
            "aiter-5d-decode-descales",
            ("kwarg", "bundled", "current"),
            CHANGED,
            _only_5d(_fp8_scaled("decode")),
            _every_forward,
            _every_layer,
            frozenset({"bytes", "caller_tensors"}),
            _SCALED_BYTES,
            "on the vectorised 5-D cache aiter's decode passes k_descale/v_descale from 0.5.13 "
            "(0.5.12 has no 5-D path and passes no scales in decode), so the pool divides k and v "
            "(in place) where the legacy call site only cast",
            evidence="kvh sut check census of the 0.5.12, 0.5.13 and 0.5.14 wheels: "
            "aiter_backend.py forward_decode, `if self.kv_cache_is_vectorized_5d:` "
            "set_kv_buffer(..., k_descale, v_descale) (0.5.13 lines 2544/2554, 0.5.14 line "
            "2383); no PR names the change",
        ),
    ),
    "intel_amx": (
        KnownDivergence(
            "intel-amx-fp8-scale-float",
            ("current",),
            CHANGED,
            _fp8_scaled("extend"),
            _every_forward,
            _every_layer,
            frozenset({"bytes", "caller_tensors"}),
            _SCALED_BYTES,
            "intel_amx's extend passed no scales until 0.5.14; 0.5.23 passes layer.k_scale_float "
            "and v_scale_float when the key buffer is fp8, so the pool divides k and v (in place) "
            "where it used to only cast",
            evidence="diff of the 0.5.14 and 0.5.23 wheels, python/sglang/srt/layers/attention/"
            "intel_amx_backend.py forward_extend: set_kv_buffer gains k_scale=layer."
            "k_scale_float, v_scale=layer.v_scale_float on fp8 caches; no PR names the change",
        ),
    ),
}
