"""PR #27695's review: MLATokenToKVPool.set_kv_buffer indexed its buffer with the KVWriteLoc."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, layer_id_override=None):
        self._store_rows(layer, loc_info, cache_k, layer_id_override)
