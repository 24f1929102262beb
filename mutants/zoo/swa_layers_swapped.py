"""layers_mapping built with the is_swa flags inverted: full layers routed to the SWA sub-pool."""

from mutants import base_kwarg as base
from mutants.base_kwarg import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    @staticmethod
    def _layers_mapping(swa_ids, full_ids):
        return {
            layer: (local, not is_swa)
            for layer, (local, is_swa) in base.SWAKVPool._layers_mapping(swa_ids, full_ids).items()
        }
