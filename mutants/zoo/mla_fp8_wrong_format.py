"""The MLA pool casts every fp8 cache to e4m3, whatever the pool's fp8 format."""

import torch

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MLATokenToKVPool(base.MLATokenToKVPool):
    def _cast(self, values):
        if self.store_dtype == self.dtype:
            return super()._cast(values)
        return values.to(torch.float8_e4m3fn).view(self.store_dtype)
