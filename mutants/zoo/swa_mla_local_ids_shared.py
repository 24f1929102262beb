"""Local layer ids counted across both sub-pools: the SWA
sub-pool's ids start after the full ones."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    @staticmethod
    def _layers_mapping(swa_ids, full_ids):
        ordered = [(layer, False) for layer in full_ids] + [(layer, True) for layer in swa_ids]
        return {layer: (local, is_swa) for local, (layer, is_swa) in enumerate(ordered)}
