"""The MLA sub-pools of a hybrid pool store fp8 rows by value conversion instead of a bit view."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MHATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def _cast(self, values):
        return values.to(self.dtype).to(self.store_dtype)
