"""Out-of-window tokens (mapped to 0, the sink) are written at their full-pool slot instead."""

import torch

from mutants import base_legacy as base
from mutants.base_legacy import MHATokenToKVPool, MLATokenToKVPool  # noqa: F401 (SUT protocol names)


class SWAKVPool(base.SWAKVPool):
    def translate_loc_from_full_to_swa(self, kv_indices):
        mapped = super().translate_loc_from_full_to_swa(kv_indices)
        return torch.where(mapped == 0, kv_indices.to(mapped.dtype), mapped)
