"""A copy-paste slip: v is divided by k_scale."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _divide(self, cache_k, cache_v, k_scale, v_scale):
        super()._divide(cache_k, cache_v, k_scale, k_scale)
