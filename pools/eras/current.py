"""Era `current` (SGLang 0.5.23): KVWriteLoc(loc, swa_loc, full_loc, physical).

KVWriteLoc (with its PR #29460 cut to len(loc), for_batch and for_layer) and unwrap_write_loc are
SGLang's API surface, shared from pools.write_loc; the doors and the SWA routing are this era's.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.storage import MHAStorage, MLAStorage
from pools.swa_storage import SWAStorage
from pools.write_loc import CurrentWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_current as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


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
        # As 0.5.23's SWAKVPool, which unwraps `loc, swa_loc, _`: a full layer writes at loc,
        # whatever full_loc says. HybridLinearKVPool and the unified pools read full_loc; not this.
        loc, swa_loc, _ = unwrap_write_loc(loc_info)
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
