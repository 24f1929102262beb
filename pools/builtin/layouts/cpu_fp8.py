"""Storage of a CPU server's fp8_e4m3 cache (the mha_cpu_fp8 kind): SGLang 0.5.23 builds its
MHATokenToKVPool with CPUFP8KVCacheMethod there, and the door's quantized path stores
`(cache_k / k_scale).to(float8_e4m3fn)`: a new tensor divided by the scale (1.0 where None) on
every write, so the caller's k and v are never changed, then cast."""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, _layer_index
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
        index = _layer_index(layer, layer_id_override) - self.start_layer
        self.engine.store_kv(
            self.k_buffer[index],
            self.v_buffer[index],
            loc,
            cache_k / (1.0 if k_scale is None else k_scale),
            cache_v / (1.0 if v_scale is None else v_scale),
            None,
            None,
            self.dtype,
            self.store_dtype,
        )
