"""PR #29460's cut taken from the wrong end: swa_loc[-len(loc):] keeps the padding's SWA ids."""

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
        n = self.loc.shape[0]
        if self.swa_loc is not None:
            self.swa_loc = self.swa_loc[self.swa_loc.shape[0] - n :]
        if self.full_loc is not None:
            self.full_loc = self.full_loc[self.full_loc.shape[0] - n :]
