"""The legacy SWAKVPool writes SWA layers at the full-pool loc, untranslated."""

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def _resolve(self, layer, loc):
        return loc
