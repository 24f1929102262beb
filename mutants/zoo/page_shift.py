"""The padding page reserved twice: every row lands one page above its slot."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MLATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _put(self, buffer, loc, rows):
        super()._put(buffer, loc + self.page_size, rows)
