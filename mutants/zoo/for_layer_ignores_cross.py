"""KVWriteLoc.for_layer forgets cross-attention: the encoder layers' K/V go to out_cache_loc
(PRs #8622/#8675's bug, moved into the 0.5.23 constructor)."""

from dataclasses import dataclass

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


@dataclass
class KVWriteLoc(base.KVWriteLoc):
    @classmethod
    def for_layer(cls, forward_batch, layer, *, swa_loc=None, full_loc=None):
        return cls.for_batch(forward_batch, swa_loc=swa_loc, full_loc=full_loc)
