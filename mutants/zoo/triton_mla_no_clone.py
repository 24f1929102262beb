"""A faulty call site: triton's scaled MLA prefill divides the caller's k in place instead of a
clone (extend still uses k afterwards). The pools are correct."""

from backends import triton
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def write(req, era, mode):
    if mode == "extend" and req.is_mla and req.layer.k_scale is not None and req.save_kv_cache:
        k = req.mla_k.div_(req.layer.k_scale)
        req.pool.set_kv_buffer(req.layer, KVWriteLoc.for_batch(req.forward_batch), k, req.v)
        return
    triton.write(req, era, mode)


BACKEND_OVERRIDES = {"triton": write}
