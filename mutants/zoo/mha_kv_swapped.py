"""k stored in the value buffer and v in the key buffer."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _store(self, layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override):
        super()._store(layer, loc, cache_v, cache_k, v_scale, k_scale, layer_id_override)
