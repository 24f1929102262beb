"""A kwarg-era SWAKVPool that prefers swa_loc whenever one is given, full layers included."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def _resolve(self, layer, loc, swa_loc):
        return swa_loc if swa_loc is not None else super()._resolve(layer, loc, swa_loc)
