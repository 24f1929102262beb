"""Era `kwarg` (SGLang 0.5.13, PR #27617): SWAKVPool takes `swa_loc=` and asserts it for SWA layers.

Non-SWA pools are unchanged from `legacy` and do not accept the keyword, which is why call sites
of this era branch on `use_sliding_window_kv_pool`.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.eras.legacy import MHATokenToKVPool, MLATokenToKVPool
from pools.builtin.swa_storage import SWAStorage

__all__ = ["MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool"]


class SWAKVPool(SWAStorage):
    def _resolve(
        self, layer: Any, loc: torch.Tensor, swa_loc: Optional[torch.Tensor]
    ) -> torch.Tensor:
        if not self._is_swa_layer(layer):
            return loc
        # The backend translates once per forward; the pool never translates.
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
