"""PRs #8622/#8675: torch_native wrote cross-attention K/V at out_cache_loc instead of
encoder_out_cache_loc. A faulty call site; the pools are correct."""

from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def write(req, era, mode):
    if not req.save_kv_cache:
        return
    loc = KVWriteLoc(req.forward_batch.out_cache_loc, req.metadata.swa_out_cache_loc)
    req.pool.set_kv_buffer(req.layer, loc, req.mla_k if req.is_mla else req.k, req.v)


BACKEND_OVERRIDES = {"torch_native": write}
