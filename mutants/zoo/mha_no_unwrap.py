"""The MHA pool was not taught KVWriteLoc: it scatters at the loc_info object itself."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _loc(self, loc_info):
        return loc_info
