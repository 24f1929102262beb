"""A bundled-era SWAKVPool that rejects a narrowed SWA write with its own ValueError where the
era's pool raises the store's IndexError (the length mismatch PR #29460 fixed): a different
exception than the declared divergence's, at the same place."""

from mutants import base_bundled as base
from mutants.base_bundled import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    unwrap_write_loc,
)


class SWAKVPool(base.SWAKVPool):
    def _resolve(self, layer, loc_info):
        loc, swa_loc = self.unwrap(loc_info)[:2]
        if self._is_swa_layer(layer) and swa_loc is not None and swa_loc.shape[0] != loc.shape[0]:
            raise ValueError(f"swa_loc has {swa_loc.shape[0]} entries for {loc.shape[0]} tokens")
        return super()._resolve(layer, loc_info)
