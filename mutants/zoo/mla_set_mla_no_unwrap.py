"""PR #27695's review bug in the other MLA door: set_mla_kv_buffer does not unwrap KVWriteLoc.

In the current era: SGLang 0.5.14's bundled pools shipped this bug, and it is declared there as
the divergence `mla-nope-rope-no-unwrap` for any SUT whose MLA doors probe as not unwrapping,
so in the bundled era this mutant is that divergence, not a fault the harness should find."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
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
