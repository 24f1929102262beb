"""An MLA DCP rank's pool that drops its owner rule: it stores every rank's tokens, each at
id // dcp_size, over the rows of its own (flashinfer_mla under --dcp-size > 1)."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def set_mla_kv_buffer(self, layer, loc_info, cache_k_nope, cache_k_rope, *args, **kwargs):
        if self.dcp_size == 1:
            return super().set_mla_kv_buffer(layer, loc_info, cache_k_nope, cache_k_rope, *args)
        loc = self._loc(loc_info) // self.dcp_size
        return base.base_bundled.MLATokenToKVPool.set_mla_kv_buffer(
            self, layer, loc, cache_k_nope, cache_k_rope, *args, **kwargs
        )
