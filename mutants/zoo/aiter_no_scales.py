"""A faulty call site: aiter's extend passes no descales to set_kv_buffer (PR #18882's shape in
another backend). The pools are correct."""

from backends import aiter
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def write(req, era, mode):
    if mode == "extend" and not req.is_mla and req.save_kv_cache:
        req.pool.set_kv_buffer(
            req.layer, KVWriteLoc.for_layer(req.forward_batch, req.layer), req.k, req.v
        )
        return
    aiter.write(req, era, mode)


BACKEND_OVERRIDES = {"aiter": write}
