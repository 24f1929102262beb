"""A faulty 0.5.23 call site: aiter's decode still passes no descales to set_kv_buffer, the
0.5.14 behaviour that 0.5.23 changed on purpose (the `changed` divergence aiter-decode-descales).
The pools are correct."""

from backends import aiter
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def write(req, era, mode):
    if mode == "decode" and not req.is_mla and req.save_kv_cache:
        loc = KVWriteLoc.for_batch(req.forward_batch, swa_loc=req.metadata.swa_out_cache_loc)
        req.pool.set_kv_buffer(req.layer, loc, req.k, req.v)
        return
    aiter.write(req, era, mode)


BACKEND_OVERRIDES = {"aiter": write}
