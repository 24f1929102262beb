"""A correct SGLang 0.5.14 (`bundled`, PR #27695) module: every door takes a bare loc or
KVWriteLoc(loc, swa_loc), and unwraps it first.

KVWriteLoc and unwrap_write_loc are SGLang's API surface, shared from pools.write_loc (pinned to
the installed SGLang by tests/test_write_loc_sglang.py); the doors and routing are the base's."""

from __future__ import annotations

from typing import Any, Optional

import torch

from mutants.base_storage import HybridPool, MHAPool, MLAPool
from pools.write_loc import BundledWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_bundled as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


class Unwrapping:
    """The doors' first step; the current era binds its own unwrap_write_loc here."""

    unwrap = staticmethod(unwrap_write_loc)

    def _loc(self, loc_info: Any) -> torch.Tensor:
        return self.unwrap(loc_info)[0]


class MHATokenToKVPool(Unwrapping, MHAPool):
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
        self._store(
            layer, self._loc(loc_info), cache_k, cache_v, k_scale, v_scale, layer_id_override
        )


class MLATokenToKVPool(Unwrapping, MLAPool):
    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_rows(layer, self._loc(loc_info), cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        self._store_nope_rope(
            layer, self._loc(loc_info), cache_k_nope, cache_k_rope, layer_id_override
        )


class SWAKVPool(Unwrapping, HybridPool):
    sub_pool_class = MHATokenToKVPool

    def _resolve(self, layer: Any, loc_info: Any) -> torch.Tensor:
        loc, swa_loc = self.unwrap(loc_info)[:2]
        if not self._is_swa_layer(layer):
            return loc
        assert swa_loc is not None, "a SWA layer needs swa_loc"
        return swa_loc
