"""The MHA pool divides copies: same bytes stored, but the caller's k/v are no longer divided in
place as SGLang's are (the reason the triton backend clones before a scaled write)."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MLATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _store(self, layer, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override):
        super()._store(
            layer, loc, cache_k.clone(), cache_v.clone(), k_scale, v_scale, layer_id_override
        )
