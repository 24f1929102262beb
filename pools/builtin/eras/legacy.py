"""Era `legacy` (SGLang 0.5.12): a bare `loc`; the SWA pool translates SWA slots itself."""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, MLAStorage
from pools.builtin.swa_storage import SWAStorage


class MHATokenToKVPool(MHAStorage):
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


class MLATokenToKVPool(MLAStorage):
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


class SWAKVPool(SWAStorage):
    # A side channel some callers set; when present it wins over the pool's own translation.
    swa_loc: Optional[torch.Tensor] = None

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
