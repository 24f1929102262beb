"""Per-backend skips, declared as data: what a backend's model leaves out, and why.

A skip either removes (backend, mode, scenario) cells from a run, because the harness has no
faithful baseline or the real site bypasses the pool there, or only documents a path that no
harness scenario reaches (`applies` is never true). Either way the reason is printed with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pools.dtypes import dtype_spec
from reports.outcome import SkipKind
from scenarios.model import FULL_LOC_KINDS, Scenario

Applies = Callable[[Scenario, str], bool]  # (scenario, mode)


def by_cell(predicate: Applies) -> Applies:
    """Marks a predicate that reads only the scenario's pool kind and dtype, and the mode: where
    it holds for one scenario of a (pool kind, dtype, backend, mode) cell it holds for all, so an
    exploring run skips the whole cell without drawing a scenario to reject."""
    predicate.by_cell = True  # type: ignore[attr-defined]
    return predicate


@dataclass(frozen=True)
class BackendSkip:
    name: str
    scope: str  # human-readable: where it applies
    reason: str
    applies: Applies
    where: str = ""  # the SGLang file, release or PR it comes from
    # SKIPPED: a check that could run and does not; BY_DESIGN: a declared trim of the plan,
    # which the verdict counts apart (reports/outcome.py).
    kind: SkipKind = SkipKind.SKIPPED

    @property
    def by_cell(self) -> bool:
        return getattr(self.applies, "by_cell", False)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "scope": self.scope,
            "reason": self.reason,
            "where": self.where,
            "kind": str(self.kind),
        }


def cross_attention(scenario: Scenario, mode: str) -> bool:
    return any(forward.cross_layers for forward in scenario.forwards)


def unsaved_layer(scenario: Scenario, mode: str) -> bool:
    """A forward that calls a layer with save_kv_cache=False."""
    return any(forward.unsaved_layers for forward in scenario.forwards)


def decode_cross_attention(scenario: Scenario, mode: str) -> bool:
    return mode == "decode" and cross_attention(scenario, mode)


@by_cell
def fp8_cache(scenario: Scenario, mode: str) -> bool:
    return dtype_spec(scenario.geometry.dtype).is_fp8


@by_cell
def swa_pool(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.kind.swa


def decode_on(predicate: Applies) -> Applies:
    def applies(scenario: Scenario, mode: str) -> bool:
        return mode == "decode" and predicate(scenario, mode)

    return by_cell(applies) if getattr(predicate, "by_cell", False) else applies


def never(scenario: Scenario, mode: str) -> bool:
    """A documented path no harness scenario reaches."""
    return False


def _fp4_non_finite(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.kind.fp4 and (scenario.values != "normal" or scenario.nan_padding)


FP4_NON_FINITE = BackendSkip(
    "fp4-non-finite",
    "FP4 pools with values past the range (inf after the cast or the scale), specials or NaN "
    "padding",
    "a block holding inf or NaN has no FP4 block scale: SGLang's quantiser casts the non-finite "
    "exponent to uint8, which is undefined, so no byte can be judged; the judge raises there",
    _fp4_non_finite,
    "kvfp4_tensor.py 0.5.23 FP4MXBlock16KVQuantizeUtil.batched_quantize",
)


def _full_loc_by_design(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.pool in FULL_LOC_KINDS and scenario.stale_full_loc


FULL_LOC_BY_DESIGN = BackendSkip(
    "full-loc-by-design",
    "hybrid linear and unified SWA pools in scenarios whose call passes a full_loc "
    "(stale-full-loc)",
    "HybridLinearKVPool.set_kv_buffer and UnifiedSWAKVPool's full layers write at full_loc by "
    "design (a pre-translated physical loc; the hybrid linear set_mla_kv_buffer ignores it), "
    "while the expected slots come from the scenario's loc alone; tests/test_hybrid_linear.py "
    "and tests/test_unified_swa.py pin both routes against the installed release instead",
    _full_loc_by_design,
    "memory_pool.py 0.5.23 HybridLinearKVPool.set_kv_buffer, unified_memory_pool.py "
    "UnifiedSWAKVPool.set_kv_buffer",
)


def no_cross_attention(backend: str, where: str) -> BackendSkip:
    return BackendSkip(
        "no-cross-attention",
        "scenarios with cross-attention layers",
        f"{backend} writes every layer at out_cache_loc: it has no encoder loc, so "
        "encoder-decoder models are not served by it",
        cross_attention,
        where,
    )
