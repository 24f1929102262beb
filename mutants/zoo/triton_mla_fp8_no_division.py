"""A faulty call site: triton's MLA extend on an fp8 cache writes k without dividing it by
k_scale (the path of #34765, FP8 MLA written with unit scale). The pools are correct."""

from backends import triton
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def write(req, era, mode):
    if mode == "extend" and req.is_mla and req.save_kv_cache and req.layer.k_scale is not None:
        loc = KVWriteLoc.for_batch(req.forward_batch, swa_loc=req.metadata.swa_out_cache_loc)
        req.pool.set_kv_buffer(req.layer, loc, req.mla_k.clone(), req.v)  # no .div_(k_scale)
        return
    triton.write(req, era, mode)


BACKEND_OVERRIDES = {"triton": write}
