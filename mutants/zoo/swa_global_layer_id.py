"""SWAKVPool passes the global layer id to its sub-pool instead of the layer's local id."""

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def _sub_pool(self, layer_id):
        pool, _ = super()._sub_pool(layer_id)
        return pool, layer_id
