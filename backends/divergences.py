"""Known divergences: each difference between an era's call site and the ground truth (the oldest
era's), declared with exactly what it explains.

A declaration names the eras it holds in, its kind (`fixed-later`: the older eras had a bug a later
one fixed; `changed`: a later era changed behaviour on purpose), when it applies (scenario, mode),
the forwards and, within each, the layers it affects, the oracles and the message pattern of the
findings it explains, the doors an explained exception comes through, and its PR, or, when no PR
names the change, the evidence it rests on. A finding outside any part of that is not explained.
An exception stops a run, so an explained exception is raised at the first declared place only.

`capability` marks a SUT's own difference from its era's model (a bug a release shipped with),
keyed on a probed capability (harness/sut/probe/capabilities.py), never on a version: it explains a
candidate whose SUT probes so against its era's baseline, never an era of the model.
The era-wide declarations are `DIVERGENCES` here; a backend's own are declared in its module, on
its entry (`Backend.divergences`). harness/compare/verdict.py reads both; docs/verdict.md says how.
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
# (scenario, layer) -> the slots a finding at that layer may name; None: any slot
Slots = Callable[[Scenario, int], frozenset[int]]


class Finding(Protocol):
    """What a divergence reads of a finding (harness/compare/findings.py)."""

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
    slots: Optional[Slots] = None  # a finding that names a slot must name one of these

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
        slot = getattr(finding, "slot", None)
        if self.slots is not None and (
            finding.layer is None or slot is None or slot not in self.slots(scenario, finding.layer)
        ):
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

    def as_dict(self) -> dict:
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


def every_forward(scenario: Scenario) -> frozenset[int]:
    return frozenset(range(len(scenario.forwards)))


def _every_layer(scenario: Scenario, forward: int) -> frozenset[int]:
    return frozenset(scenario.geometry.layer_ids)


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


def _narrowed_to_rows(one_row: bool) -> Forwards:
    """The narrowed SWA forwards that keep one token (`one_row`) or any other count: torch's
    `buffer[swa_loc] = k` broadcasts one row over the longer swa_loc and raises on the others."""

    def forwards(scenario: Scenario) -> frozenset[int]:
        return frozenset(
            index
            for index in _narrowed_swa_forwards(scenario)
            if (scenario.forwards[index].tokens == 1) == one_row
        )

    return forwards


def _until_last_broadcast(scenario: Scenario) -> frozenset[int]:
    """Every forward up to the last one-token narrowed SWA write: a slot it clobbers names the
    forward that wrote it earlier."""
    broadcasts = _narrowed_to_rows(True)(scenario)
    return frozenset(range(max(broadcasts) + 1)) if broadcasts else frozenset()


def _padded_swa_slots(scenario: Scenario, layer: int) -> frozenset[int]:
    """The SWA slots the padded tokens of a one-token narrowed forward translate to: where the
    broadcast writes that token's K/V (none on a full layer)."""
    if layer not in scenario.geometry.swa_layer_ids:
        return frozenset()
    slots: set[int] = set()
    for index in _narrowed_to_rows(True)(scenario):
        forward, mapping = scenario.forwards[index], scenario.mapping_at(index)
        if mapping is not None and layer in scenario.layers_of(forward):
            slots.update(mapping[slot] for slot in forward.loc[forward.tokens :])
    return frozenset(slots)


def _narrowed_swa_write_of(one_row: bool) -> Applies:
    return lambda scenario, mode: (
        scenario.geometry.kind.swa and bool(_narrowed_to_rows(one_row)(scenario))
    )


def _swa_layers(scenario: Scenario, forward: int) -> frozenset[int]:
    return frozenset(scenario.geometry.swa_layer_ids)


def _narrowed_swa_write(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.kind.swa and bool(_narrowed_swa_forwards(scenario))


def _mla(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.kind.latent


def _mla_without_rope(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.kind.latent and scenario.geometry.qk_rope_head_dim == 0


DIVERGENCES: tuple[KnownDivergence, ...] = (
    KnownDivergence(
        "unsliced-swa-loc",
        ("kwarg", "bundled"),
        FIXED_LATER,
        _narrowed_swa_write_of(False),
        _narrowed_to_rows(False),
        _swa_layers,
        frozenset({"exception"}),
        r"slots for \d+ rows|shape mismatch|out of bounds for (dimension|axis) 0",
        "swa_loc is translated once from the padded out_cache_loc; piecewise graphs narrow loc, "
        "and until KVWriteLoc.__post_init__ cut swa_loc to len(loc) the SWA write of a forward "
        "narrowed to 2 or more tokens (fewer than its padded loc) raised on the length mismatch "
        "(torch's shape mismatch): the model raises at the first SWA layer of the first such "
        "forward, and nothing after it runs",
        pr="#29460",
        doors=("set_kv_buffer",),
    ),
    KnownDivergence(
        "unsliced-swa-loc-broadcast",
        ("kwarg", "bundled"),
        FIXED_LATER,
        _narrowed_swa_write_of(True),
        _until_last_broadcast,
        _swa_layers,
        frozenset({"untouched", "bytes", "value"}),
        r"a slot that no token writes was changed|written bytes differ",
        "the same uncut swa_loc (#29460) with a forward narrowed to one token: torch's "
        "buffer[swa_loc] = k broadcasts the one row over every slot of the longer swa_loc, so "
        "the SWA pool silently writes that token's K/V into the SWA slots of the padded tokens "
        "(where the ground truth writes only the token's own); nothing raises. Explains only "
        "differences at those slots of SWA layers",
        pr="#29460",
        slots=_padded_swa_slots,
    ),
    KnownDivergence(
        "mla-nope-rope-no-unwrap",
        # 0.5.15 to 0.5.21 (current pools without the constructors) still do not unwrap there.
        ("bundled", "current"),
        FIXED_LATER,
        _mla,
        _first_forward,
        _every_layer,
        frozenset({"exception"}),
        r"'KVWriteLoc' object has no attribute",
        "MLATokenToKVPool.set_mla_kv_buffer does not unwrap KVWriteLoc (its set_kv_buffer does; "
        "SGLang 0.5.14 shipped so): the review of PR #27695 found the MLA pools missing the "
        "unwrap; the first MLA write raises. 0.5.15 to 0.5.21 kept it so (0.5.22 unwraps). "
        "Applies to any SUT whose MLA doors probe as not unwrapping",
        pr="#27695",
        doors=("set_mla_kv_buffer",),
        capability=("mla_unwraps_write_loc", False),
    ),
    KnownDivergence(
        "mla-door-needs-rope",
        ("legacy", "kwarg", "bundled", "current"),
        CHANGED,
        _mla_without_rope,
        _first_forward,
        _every_layer,
        frozenset({"exception"}),
        r"'NoneType' object has no attribute '(to|shape|view)'",
        "MLATokenToKVPool.set_mla_kv_buffer takes a rope tensor: on a pool without rope columns "
        "the caller's k_rope is None, and a release that casts and measures k_rope "
        "unconditionally raises on it at the first MLA write (0.5.22 and 0.5.23 write the nope "
        "part alone). Applies to any SUT whose MLA door probes as not taking a missing rope",
        evidence="harness/sut/probe/capabilities.py _mla_door_takes_no_rope on the 0.5.14, "
        "0.5.22 and 0.5.23 wheels: memory_pool.py set_mla_kv_buffer casts cache_k_rope.to(dtype) "
        "and mla_buffer.py reads cache_k_rope.shape in 0.5.14; no PR names the change",
        doors=("set_mla_kv_buffer",),
        capability=("mla_door_takes_no_rope", False),
    ),
    KnownDivergence(
        "mla-writes-reserved-slot",
        ("legacy", "kwarg", "bundled", "current"),
        FIXED_LATER,
        _mla,
        every_forward,
        _every_layer,
        frozenset({"reserved_slot"}),
        r"the reserved slot the store's policy skips, was written",
        "MLATokenToKVPool.set_mla_kv_buffer's store writes every loc, slot 0 included, so "
        "CUDA-graph padding rows (NaN or not) overwrite the reserved slot (#32477); the store "
        "that takes reserved_skip_index drops them. Applies to any SUT whose MLA door probes as "
        "not reaching a reserved_skip_index (on the wheels: 0.5.12 to 0.5.18)",
        pr="#32477",
        doors=("set_mla_kv_buffer",),
        capability=("mla_skips_reserved_slot", False),
    ),
)


# What the backend modules' own divergences are built from: each backend module declares its
# divergences beside its call site, on its entry (backends/aiter.py, backends/intel_amx.py).
every_layer: Layers = _every_layer
SCALED_BYTES = r"written bytes differ|caller tensor"


def _scaled(scenario: Scenario) -> bool:
    return any(
        scale.kind != "none" and scale.value != 1.0
        for scale in (scenario.k_scale, scenario.v_scale)
    )


def fp8_scaled(mode: str) -> Applies:
    """A scaled MHA write into an fp8 cache in `mode`: where passing the scales or not shows
    (MLA writes take no scales in any era)."""
    return lambda scenario, actual: (
        actual == mode
        and _scaled(scenario)
        and not scenario.geometry.kind.latent
        and dtype_spec(scenario.geometry.dtype).is_fp8
    )
