"""register_mapping keeps a copy of full_to_swa_index_mapping: the allocator's later in-place
updates never reach the pool's translation."""

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def register_mapping(self, full_to_swa_index_mapping):
        super().register_mapping(full_to_swa_index_mapping.clone())
