"""PR #18882's shape: an MHA pool that casts without dividing by k_scale and v_scale."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _divide(self, cache_k, cache_v, k_scale, v_scale):
        pass
