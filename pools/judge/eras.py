"""The judge's four API front-ends: how each era's pools take a write's location.

- legacy (0.5.12): a bare loc everywhere; SWAKVPool translates SWA layers with its mapping, unless
  a `swa_loc` side-channel attribute was set (then that wins), and passes the loc through when
  nothing is registered.
- kwarg (0.5.13): non-SWA pools unchanged; SWAKVPool takes `swa_loc=` and asserts it on SWA layers.
- bundled (0.5.14): `loc_info`, a bare tensor or KVWriteLoc(loc, swa_loc); SWA layers assert a
  swa_loc.
- current (0.5.23): KVWriteLoc(loc, swa_loc, full_loc, physical), whose construction cuts swa_loc
  and full_loc to len(loc); SWA layers assert a swa_loc, full layers use full_loc when given.
The SWA pool's default scales are 1.0, the other pools' None. No era refuses a loc that is not
marked physical: the pools modelled here are not unified ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

# ----- KVWriteLoc, as each era has it ---------------------------------------------------------


@dataclass
class BundledWriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None


def unwrap_bundled(loc_info: Any) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    if isinstance(loc_info, BundledWriteLoc):
        return loc_info.loc, loc_info.swa_loc
    return loc_info, None


@dataclass
class CurrentWriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None
    full_loc: Optional[torch.Tensor] = None
    physical: bool = False

    @classmethod
    def for_batch(
        cls,
        forward_batch: Any,
        *,
        swa_loc: Optional[torch.Tensor] = None,
        full_loc: Optional[torch.Tensor] = None,
    ) -> "CurrentWriteLoc":
        return cls(
            forward_batch.out_cache_loc,
            swa_loc,
            full_loc,
            physical=getattr(forward_batch, "out_cache_loc_is_physical", False),
        )

    @classmethod
    def for_layer(
        cls,
        forward_batch: Any,
        layer: Any,
        *,
        swa_loc: Optional[torch.Tensor] = None,
        full_loc: Optional[torch.Tensor] = None,
    ) -> "CurrentWriteLoc":
        # The encoder loc is never translated, so it is never marked physical.
        if getattr(layer, "is_cross_attention", False):
            return cls(forward_batch.encoder_out_cache_loc, swa_loc, full_loc)
        return cls.for_batch(forward_batch, swa_loc=swa_loc, full_loc=full_loc)

    def __post_init__(self) -> None:
        length = self.loc.shape[0]
        if self.swa_loc is not None and self.swa_loc.shape[0] != length:
            self.swa_loc = self.swa_loc[:length]
        if self.full_loc is not None and self.full_loc.shape[0] != length:
            self.full_loc = self.full_loc[:length]


def unwrap_current(
    loc_info: Any,
) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    if isinstance(loc_info, CurrentWriteLoc):
        return loc_info.loc, loc_info.swa_loc, loc_info.full_loc
    return loc_info, None, None


# ----- legacy and kwarg -----------------------------------------------------------------------


class LegacyMHA:
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


class LegacyMLA:
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

    def _resolve(self, layer: Any, loc: torch.Tensor) -> torch.Tensor:
        if not self._is_swa_layer(layer):
            return loc
        if self.swa_loc is not None:
            return self.swa_loc
        if self.full_to_swa_index_mapping is not None:
            return self.translate_loc_from_full_to_swa(loc)
        return loc

    def set_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        self._write_kv(layer, self._resolve(layer, loc), cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        self._write_mla(layer, self._resolve(layer, loc), cache_k_nope, cache_k_rope)


class KwargSWA:
    def _resolve(
        self, layer: Any, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]
    ) -> torch.Tensor:
        if not self._is_swa_layer(layer):
            return loc
        assert swa_loc is not None
        return swa_loc

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
        self._write_kv(
            layer, self._resolve(layer, loc, swa_loc), cache_k, cache_v, k_scale, v_scale
        )

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        swa_loc: Optional[torch.Tensor] = None,
    ) -> None:
        self._write_mla(layer, self._resolve(layer, loc, swa_loc), cache_k_nope, cache_k_rope)


# ----- bundled and current: one loc_info, unwrapped --------------------------------------------


def _locs(
    pool: Any, loc_info: Any
) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(loc, swa_loc, full_loc) of a loc_info in the pool's era (bundled has no full_loc)."""
    if pool.era_current:
        return unwrap_current(loc_info)
    loc, swa_loc = unwrap_bundled(loc_info)
    return loc, swa_loc, None


class WrappedMHA:
    era_current: bool

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
        loc = _locs(self, loc_info)[0]
        self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)


class WrappedMLA:
    era_current: bool

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_rows(layer, _locs(self, loc_info)[0], cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_nope_rope(
            layer, _locs(self, loc_info)[0], cache_k_nope, cache_k_rope, layer_id_override
        )


class WrappedSWA:
    era_current: bool

    def _resolve(self, layer: Any, loc_info: Any) -> torch.Tensor:
        loc, swa_loc, full_loc = _locs(self, loc_info)
        if self._is_swa_layer(layer):
            assert swa_loc is not None
            return swa_loc
        return full_loc if full_loc is not None else loc

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        self._write_kv(layer, self._resolve(layer, loc_info), cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        self._write_mla(layer, self._resolve(layer, loc_info), cache_k_nope, cache_k_rope)


@dataclass(frozen=True)
class EraFront:
    name: str
    mha: type
    mla: type
    swa: type
    era_current: bool = False
    write_loc: Optional[type] = None  # KVWriteLoc, where the era has it
    unwrap: Optional[Any] = None  # unwrap_write_loc, where the era has it


ERA_FRONTS: dict[str, EraFront] = {
    front.name: front
    for front in (
        EraFront("legacy", LegacyMHA, LegacyMLA, LegacySWA),
        EraFront("kwarg", LegacyMHA, LegacyMLA, KwargSWA),
        EraFront(
            "bundled", WrappedMHA, WrappedMLA, WrappedSWA, False, BundledWriteLoc, unwrap_bundled
        ),
        EraFront(
            "current", WrappedMHA, WrappedMLA, WrappedSWA, True, CurrentWriteLoc, unwrap_current
        ),
    )
}
