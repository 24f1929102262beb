"""An fp8 cache stored by value conversion (fp8 -> uint8 numbers) instead of a bit view."""

from mutants import base_legacy as base
from mutants.base_legacy import MLATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _cast(self, values):
        return values.to(self.dtype).to(self.store_dtype)
