"""SWAKVPool takes loc_info for a bare loc and translates it itself, as 0.5.12 did."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    unwrap_write_loc,
)


class SWAKVPool(base.SWAKVPool):
    def _resolve(self, layer, loc_info):
        return (
            self.translate_loc_from_full_to_swa(loc_info) if self._is_swa_layer(layer) else loc_info
        )
