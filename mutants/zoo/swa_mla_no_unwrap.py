"""SWAKVPool.set_mla_kv_buffer hands loc_info to the sub-pool unresolved: the sub-pool unwraps the
full-pool loc, so SWA layers land at untranslated slots."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    unwrap_write_loc,
)


class SWAKVPool(base.SWAKVPool):
    def set_mla_kv_buffer(self, layer, loc_info, cache_k_nope, cache_k_rope):
        self._write_mla(layer, loc_info, cache_k_nope, cache_k_rope)
