"""A faulty context-parallel call site: the all-gathered shares are written in gathered (zigzag)
order, without restoring token order. The pools are correct."""

from backends import context_parallel as cp
from mutants.base_current import (  # noqa: F401 (SUT protocol names)
    KVWriteLoc,
    MHATokenToKVPool,
    MLATokenToKVPool,
    SWAKVPool,
    unwrap_write_loc,
)


def _gathered(tensor, cp_size):
    return cp.all_gather([cp.zigzag_share(tensor, rank, cp_size) for rank in range(cp_size)])


def write(req, era, mode):
    if not req.save_kv_cache:
        return
    size = req.forward_batch.attn_cp_size
    loc = KVWriteLoc.for_layer(req.forward_batch, req.layer, swa_loc=req.metadata.swa_out_cache_loc)
    req.pool.set_kv_buffer(
        req.layer,
        loc,
        _gathered(req.k, size),
        _gathered(req.v, size),
        req.layer.k_scale,
        req.layer.v_scale,
    )


BACKEND_OVERRIDES = {"cp": write}
