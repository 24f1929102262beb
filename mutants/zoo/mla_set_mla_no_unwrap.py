"""PR #27695's review bug in the other MLA door: set_mla_kv_buffer does not unwrap KVWriteLoc."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def set_mla_kv_buffer(
        self, layer, loc_info, cache_k_nope, cache_k_rope, layer_id_override=None
    ):
        self._store_nope_rope(layer, loc_info, cache_k_nope, cache_k_rope, layer_id_override)
