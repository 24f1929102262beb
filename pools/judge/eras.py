"""The judge's four API front-ends: what each era's doors read from their arguments.

A door here only reads where its write goes and hands that on: MHA and MLA pools store at `loc`;
SWAKVPool's doors hand on `loc` and the swa_loc they were given (if any), and the pool
(pools/judge/hybrid.py) routes by layer, asking the era's `swa_slots` for a SWA layer's slots.

- legacy (0.5.12): a bare loc everywhere; SWAKVPool translates SWA layers with its mapping, unless
  a `swa_loc` side-channel attribute was set (then that wins), and passes the loc through when
  nothing is registered.
- kwarg (0.5.13): non-SWA pools unchanged; SWAKVPool takes `swa_loc=` and asserts it on SWA layers.
- bundled (0.5.14): `loc_info`, a bare tensor or KVWriteLoc(loc, swa_loc); SWA layers assert a
  swa_loc.
- current (0.5.23): KVWriteLoc(loc, swa_loc, full_loc, physical), whose construction cuts swa_loc
  and full_loc to len(loc); SWA layers assert a swa_loc. No pool modelled here reads full_loc:
  0.5.23's SWAKVPool unwraps `loc, swa_loc, _`, so its full layers write at loc whatever full_loc
  says (only HybridLinearKVPool and the unified pools read it).
The SWA pool's default scales are 1.0, the other pools' None. No era refuses a loc that is not
marked physical: the pools modelled here are not unified ones. The current MHA door takes a DCP
rank's mask of the tokens it stores (dcp_kv_mask).

`KVWriteLoc` and `unwrap_write_loc` are SGLang's API surface, shared openly from pools.write_loc
(tests/test_write_loc_sglang.py pins them to the installed SGLang); everything else is the judge's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from pools.kinds.pool_classes import judge_pool
from pools.kinds.spec import PoolKind
from pools.write_loc import BundledWriteLoc, CurrentWriteLoc, unwrap_bundled, unwrap_current

# ----- doors that take a bare loc (legacy, and kwarg's MHA and MLA pools) ----------------------


class BareLocMHA:
    def set_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)


class BareLocMLA:
    # No scales: the MLA pool casts and stores, and ignores cache_v.
    def set_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_rows(layer, loc, cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_nope_rope(layer, loc, cache_k_nope, cache_k_rope, layer_id_override)


class LegacySWA:
    swa_loc: Optional[torch.Tensor] = None  # the side channel some callers set

    def swa_slots(self, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]) -> torch.Tensor:
        """0.5.12 translates a SWA layer's loc itself; a swa_loc the caller set wins."""
        if swa_loc is not None:
            return swa_loc
        if self.full_to_swa_index_mapping is None:
            return loc
        return self.translate_loc_from_full_to_swa(loc)

    def set_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        self._write_kv(layer, loc, self.swa_loc, cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        self._write_mla(layer, loc, self.swa_loc, cache_k_nope, cache_k_rope)


class GivenSWASlots:
    """From 0.5.13 on the backend translates once per forward and the pool never does."""

    def swa_slots(self, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]) -> torch.Tensor:
        assert swa_loc is not None
        return swa_loc


class KwargSWA(GivenSWASlots):
    def set_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
        swa_loc: Optional[torch.Tensor] = None,
    ) -> None:
        self._write_kv(layer, loc, swa_loc, cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        swa_loc: Optional[torch.Tensor] = None,
    ) -> None:
        self._write_mla(layer, loc, swa_loc, cache_k_nope, cache_k_rope)


# ----- doors that take loc_info and unwrap it (bundled, current) -------------------------------
# `unwrap` is the era's unwrap_write_loc, bound by judge_module. Every pool reads loc from it,
# SWAKVPool swa_loc as well; none reads full_loc.


class UnwrappingMHA:
    unwrap: Callable[[Any], tuple]

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, *_ = self.unwrap(loc_info)
        self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)


class CurrentMHA(UnwrappingMHA):
    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
        dcp_kv_mask: Optional[torch.Tensor] = None,
    ) -> None:
        """0.5.23 takes a DCP rank's mask (triton under --dcp-size > 1): the scales divide and
        the cast covers every token, then only the tokens the mask keeps are stored."""
        loc, *_ = self.unwrap(loc_info)
        if dcp_kv_mask is None:
            self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)
        else:
            self._store_masked(layer, loc, cache_k, cache_v, k_scale, v_scale, dcp_kv_mask)


class UnwrappingMLA:
    unwrap: Callable[[Any], tuple]

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, *_ = self.unwrap(loc_info)
        self._store_rows(layer, loc, cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, *_ = self.unwrap(loc_info)
        self._store_nope_rope(layer, loc, cache_k_nope, cache_k_rope, layer_id_override)


class UnwrappingSWA(GivenSWASlots):
    unwrap: Callable[[Any], tuple]

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        loc, swa_loc, *_ = self.unwrap(loc_info)
        self._write_kv(layer, loc, swa_loc, cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        loc, swa_loc, *_ = self.unwrap(loc_info)
        self._write_mla(layer, loc, swa_loc, cache_k_nope, cache_k_rope)


@dataclass(frozen=True)
class EraFront:
    name: str
    mha: type
    mla: type
    swa: type
    write_loc: Optional[type] = None  # KVWriteLoc, where the era has it
    unwrap: Optional[Callable[[Any], tuple]] = None  # unwrap_write_loc, where the era has it
    # Whether set_mla_kv_buffer checks that its nope/rope rows match the slots: 0.5.23's selects
    # rows with a mask and raises IndexError on any other count (checked against the installed
    # release); 0.5.12 to 0.5.14's is a Triton kernel (triton_ops/mla_buffer.py) that reads row
    # i for slot i, so what it writes for another count is established by no code here.
    mla_rows_checked: bool = False


ERA_FRONTS: dict[str, EraFront] = {
    front.name: front
    for front in (
        EraFront("legacy", BareLocMHA, BareLocMLA, LegacySWA),
        EraFront("kwarg", BareLocMHA, BareLocMLA, KwargSWA),
        EraFront(
            "bundled", UnwrappingMHA, UnwrappingMLA, UnwrappingSWA, BundledWriteLoc, unwrap_bundled
        ),
        EraFront(
            "current",
            CurrentMHA,
            UnwrappingMLA,
            UnwrappingSWA,
            CurrentWriteLoc,
            unwrap_current,
            mla_rows_checked=True,
        ),
    )
}


def era_marks(front: EraFront) -> dict[str, Any]:
    """What a judge class over the era's doors carries: the era's unwrap_write_loc, as the doors
    of the bundled and current eras call it."""
    return {} if front.unwrap is None else {"unwrap": staticmethod(front.unwrap)}


def judge_over_era_doors(kind: PoolKind, storage: type) -> None:
    """Registers a layout kind's judge: `storage` over the era's MHA doors (MLA doors, on a
    latent kind), under the record's SGLang class. The storage comes first, so a layout's own
    doors (the NPU MLA set_kv_buffer) win over the era's."""

    def judge(module: Any) -> type:
        front: EraFront = module.era_front
        doors = front.mla if kind.latent else front.mha
        return type(kind.sglang_class, (storage, doors), era_marks(front))

    judge_pool(kind)(judge)
