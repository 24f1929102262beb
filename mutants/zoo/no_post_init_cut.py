"""PR #29460: KVWriteLoc without __post_init__: swa_loc, translated from the padded
out_cache_loc, is not cut to a narrowed loc."""

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
    def __post_init__(self):
        pass
