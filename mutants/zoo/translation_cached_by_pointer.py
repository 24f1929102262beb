"""PR #24743's shape inside a pool: the legacy SWAKVPool caches its translation keyed on the loc
tensor's data pointer, so a graph replay through the same static buffer gets the previous
replay's SWA ids."""

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def translate_loc_from_full_to_swa(self, kv_indices):
        cache = self.__dict__.setdefault("_translated", {})
        key = kv_indices.data_ptr()
        if key not in cache:
            cache[key] = super().translate_loc_from_full_to_swa(kv_indices)
        return cache[key]
