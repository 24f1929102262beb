"""A kwarg-era SWAKVPool that flips a bit in every full-layer row it stores while the forward is
narrowed (swa_loc longer than loc): a fault that lives only in the scenarios PR #29460's known
divergence (unsliced-swa-loc) covers, where the SWA write raises right after the full layers."""

import torch

from mutants import base_kwarg as base
from mutants.base_kwarg import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def set_kv_buffer(self, layer, loc, cache_k, cache_v, k_scale=1.0, v_scale=1.0, swa_loc=None):
        super().set_kv_buffer(layer, loc, cache_k, cache_v, k_scale, v_scale, swa_loc=swa_loc)
        if (
            swa_loc is not None
            and swa_loc.shape[0] != loc.shape[0]
            and not self._is_swa_layer(layer)
        ):
            pool, local_id = self._sub_pool(layer.layer_id)
            rows = pool.k_buffer[local_id].view(torch.uint8)
            rows[loc] = rows[loc] ^ 1
