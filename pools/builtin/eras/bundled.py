"""Era `bundled` (SGLang 0.5.14, PR #27695): one `loc_info`, a bare loc or KVWriteLoc(loc, swa_loc).

KVWriteLoc and unwrap_write_loc are SGLang's API surface, shared from pools.write_loc."""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, MLAStorage
from pools.builtin.swa_storage import SWAStorage
from pools.write_loc import BundledWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_bundled as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


class _Unwrapping:
    """How this era's doors read a loc_info: (loc, swa_loc). The current era's pools are these
    doors with a 3-value unwrap whose full_loc they ignore (pools/builtin/eras/current.py)."""

    unwrap_locs = staticmethod(unwrap_write_loc)


class MHATokenToKVPool(_Unwrapping, MHAStorage):
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
        loc, _ = self.unwrap_locs(loc_info)
        self._store(layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override)


class MLATokenToKVPool(_Unwrapping, MLAStorage):
    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, _ = self.unwrap_locs(loc_info)
        self._store_rows(layer, loc, cache_k, layer_id_override)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        loc, _ = self.unwrap_locs(loc_info)
        self._store_nope_rope(layer, loc, cache_k_nope, cache_k_rope, layer_id_override)


class SWAKVPool(_Unwrapping, SWAStorage):
    def _resolve(self, layer: Any, loc_info: Any) -> torch.Tensor:
        loc, swa_loc = self.unwrap_locs(loc_info)
        if not self._is_swa_layer(layer):
            return loc
        assert swa_loc is not None
        return swa_loc

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
