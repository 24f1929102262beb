"""A correct SGLang 0.5.13 (`kwarg`, PR #27617) module: SWAKVPool takes `swa_loc=` and asserts it
on SWA layers; the MHA and MLA pools are 0.5.12's and reject the keyword."""

from __future__ import annotations

from typing import Any, Optional

import torch

from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool
from mutants.base_storage import HybridPool

__all__ = ["MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool"]


class SWAKVPool(HybridPool):
    sub_pool_class = MHATokenToKVPool

    def _resolve(
        self, layer: Any, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]
    ) -> torch.Tensor:
        if not self._is_swa_layer(layer):
            return loc
        assert swa_loc is not None, "a SWA layer needs swa_loc"
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
