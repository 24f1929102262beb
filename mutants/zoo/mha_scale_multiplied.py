"""The MHA pool multiplies by the scales where SGLang divides."""

from mutants import base_legacy as base
from mutants.base_legacy import MLATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _divide(self, cache_k, cache_v, k_scale, v_scale):
        if cache_k.dtype != self.dtype:
            if k_scale is not None:
                cache_k.mul_(k_scale)
            if v_scale is not None:
                cache_v.mul_(v_scale)
