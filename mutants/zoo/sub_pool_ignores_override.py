"""The MHA pool ignores layer_id_override and reads layer.layer_id: SWAKVPool's sub-pool calls
(layer=None, layer_id_override=local id) break."""

from mutants import base_current as base
from mutants.base_current import KVWriteLoc, MLATokenToKVPool, unwrap_write_loc  # noqa: F401 (SUT protocol names)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def _index(self, layer, layer_id_override):
        return layer.layer_id - self.start_layer


class SWAKVPool(base.SWAKVPool):
    sub_pool_class = MHATokenToKVPool
