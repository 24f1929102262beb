"""Era `current` (SGLang 0.5.23): KVWriteLoc(loc, swa_loc, full_loc, physical).

KVWriteLoc (with its PR #29460 cut to len(loc), for_batch and for_layer) and unwrap_write_loc are
SGLang's API surface, shared from pools.write_loc. The doors are the bundled era's, reading the
3-value unwrap: these pools ignore full_loc, as 0.5.23's do (its SWAKVPool unwraps
`loc, swa_loc, _`, so a full layer writes at loc; HybridLinearKVPool and the unified pools read
full_loc, not these). The MHA door takes a DCP rank's mask too (dcp_kv_mask).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.eras import bundled
from pools.write_loc import CurrentWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_current as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


def _loc_and_swa_loc(loc_info: Any) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    loc, swa_loc, _ = unwrap_write_loc(loc_info)
    return loc, swa_loc


class MHATokenToKVPool(bundled.MHATokenToKVPool):
    unwrap_locs = staticmethod(_loc_and_swa_loc)

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
        layer_id_override: Optional[int] = None,
        dcp_kv_mask: Optional[torch.Tensor] = None,
    ) -> None:
        """The bundled door, and a DCP rank's mask of the tokens it keeps (triton under
        --dcp-size > 1)."""
        if dcp_kv_mask is None:
            super().set_kv_buffer(
                layer, loc_info, cache_k, cache_v, k_scale, v_scale, layer_id_override
            )
            return
        loc, _ = self.unwrap_locs(loc_info)
        self._store_masked(layer, loc, cache_k, cache_v, k_scale, v_scale, dcp_kv_mask)


class MLATokenToKVPool(bundled.MLATokenToKVPool):
    unwrap_locs = staticmethod(_loc_and_swa_loc)


class SWAKVPool(bundled.SWAKVPool):
    unwrap_locs = staticmethod(_loc_and_swa_loc)
