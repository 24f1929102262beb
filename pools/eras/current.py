"""Era `current` (SGLang 0.5.23): KVWriteLoc(loc, swa_loc, full_loc, physical).

`__post_init__` cuts swa_loc and full_loc to len(loc) (PR #29460): they are resolved once from
the padded out_cache_loc, and piecewise graphs later narrow loc.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from pools.storage import MHAStorage, MLAStorage
from pools.swa_storage import SWAStorage


@dataclass
class KVWriteLoc:
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
    ) -> "KVWriteLoc":
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
    ) -> "KVWriteLoc":
        # Nothing translates the encoder loc, so it is never marked physical.
        if getattr(layer, "is_cross_attention", False):
            return cls(forward_batch.encoder_out_cache_loc, swa_loc, full_loc)
        return cls.for_batch(forward_batch, swa_loc=swa_loc, full_loc=full_loc)

    def __post_init__(self) -> None:
        if self.swa_loc is not None and self.swa_loc.shape[0] != self.loc.shape[0]:
            self.swa_loc = self.swa_loc[: self.loc.shape[0]]
        if self.full_loc is not None and self.full_loc.shape[0] != self.loc.shape[0]:
            self.full_loc = self.full_loc[: self.loc.shape[0]]


def unwrap_write_loc(
    loc_info: Any,
) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    if isinstance(loc_info, KVWriteLoc):
        return loc_info.loc, loc_info.swa_loc, loc_info.full_loc
    return loc_info, None, None


class MHATokenToKVPool(MHAStorage):
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
        loc, _, _ = unwrap_write_loc(loc_info)
        self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)


class MLATokenToKVPool(MLAStorage):
    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, _, _ = unwrap_write_loc(loc_info)
        self._store_rows(layer, loc, cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, _, _ = unwrap_write_loc(loc_info)
        self._store_nope_rope(layer, loc, cache_k_nope, cache_k_rope, layer_id_override)


class SWAKVPool(SWAStorage):
    def _resolve(self, layer: Any, loc_info: Any) -> torch.Tensor:
        loc, swa_loc, full_loc = unwrap_write_loc(loc_info)
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
