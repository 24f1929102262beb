"""SWAKVPool's scale defaults are None instead of 1.0 (an equivalent mutant: see the catalog)."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    unwrap_write_loc,
)


class SWAKVPool(base.SWAKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, k_scale=None, v_scale=None):
        super().set_kv_buffer(layer, loc_info, cache_k, cache_v, k_scale, v_scale)
