"""PR #15522: a kernel that copies nope in 512-wide blocks, masked by the row width rather than
by nope_dim: with nope_dim = 528 the second block runs over the rope columns with masked-load
zeros."""

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, SWAKVPool  # noqa: F401 (SUT protocol names)

BLOCK = 512


class MLATokenToKVPool(base.MLATokenToKVPool):
    def _store_nope_rope(self, layer, loc, k_nope, k_rope, layer_id_override):
        super()._store_nope_rope(layer, loc, k_nope, k_rope, layer_id_override)
        rank = self.kv_lora_rank
        if rank % BLOCK:
            self.kv_buffer[self._index(layer, layer_id_override)][loc, ..., rank:] = 0
