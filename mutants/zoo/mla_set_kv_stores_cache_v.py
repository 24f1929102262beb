"""MLATokenToKVPool.set_kv_buffer stores its second tensor (cache_v, the nope part) as the row."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, layer_id_override=None):
        super().set_kv_buffer(layer, loc_info, cache_v, cache_k, layer_id_override)
