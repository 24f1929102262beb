"""Storage of a CPU server's fp8_e4m3 cache (the mha_cpu_fp8 kind): SGLang 0.5.23 builds its
MHATokenToKVPool with CPUFP8KVCacheMethod there, and the door's quantized path stores
`(cache_k / k_scale).to(float8_e4m3fn)`: a new tensor divided by the scale (1.0 where None) on
every write, so the caller's k and v are never changed, then cast."""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage
from pools.builtin.engines.base import Scale


class CPUFP8Storage(MHAStorage):
    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        layer_id_override: Optional[int],
    ) -> None:
        # The divided copies reach the store without scales: it only casts them.
        k = cache_k / (1.0 if k_scale is None else k_scale)
        v = cache_v / (1.0 if v_scale is None else v_scale)
        super()._store(layer, loc, k, v, None, None, layer_id_override)
