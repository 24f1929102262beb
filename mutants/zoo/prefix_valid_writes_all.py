"""A draft-commit door that writes every row of loc_2d, as if commit_lens were the row width: a
draft's rejected tokens land in the cache (models/dspark.py's set_kv_buffer_prefix_valid)."""

import torch

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def set_kv_buffer_prefix_valid(self, layer, loc_2d, commit_lens, *args, **kwargs):
        every_row = torch.full_like(commit_lens, loc_2d.shape[1])
        super().set_kv_buffer_prefix_valid(layer, loc_2d, every_row, *args, **kwargs)
