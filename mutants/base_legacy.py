"""A correct SGLang 0.5.12 (`legacy`) pool module: a bare loc; SWAKVPool translates SWA slots."""

from __future__ import annotations

from typing import Any, Optional

import torch

from mutants.base_storage import HybridPool, MHAPool, MLAPool


class MHATokenToKVPool(MHAPool):
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


class MLATokenToKVPool(MLAPool):
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


class SWAKVPool(HybridPool):
    sub_pool_class = MHATokenToKVPool

    def _resolve(self, layer: Any, loc: torch.Tensor) -> torch.Tensor:
        return self.translate_loc_from_full_to_swa(loc) if self._is_swa_layer(layer) else loc
