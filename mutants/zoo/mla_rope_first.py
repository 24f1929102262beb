"""set_mla_kv_buffer lays the row out as rope ++ nope instead of nope ++ rope."""

import torch

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def _store_nope_rope(self, layer, loc, k_nope, k_rope, layer_id_override):
        row = k_nope if k_rope is None or k_rope.shape[-1] == 0 else torch.cat([k_rope, k_nope], -1)
        self._store_rows(layer, loc, row, layer_id_override)
