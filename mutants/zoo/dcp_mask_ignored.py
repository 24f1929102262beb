"""A DCP rank's door that drops the mask: the rank stores every token of the batch, those of the
other ranks' positions too, each at loc // dcp_size (triton under --dcp-size > 1)."""

from mutants import base_current as base
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


class MHATokenToKVPool(base.MHATokenToKVPool):
    def set_kv_buffer(self, *args, dcp_kv_mask=None, **kwargs):
        super().set_kv_buffer(*args, **kwargs)
