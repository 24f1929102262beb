"""trtllm_mha (layers/attention/trtllm_mha_backend.py, CUDA SM90+; MHA; a flashinfer subclass).

Always writes out_cache_loc (no cross-attention); 0.5.23 uses KVWriteLoc.for_batch and
flashinfer's `_kv_write_scales`. With an fp8 KV cache a fused kernel writes the cache itself
and set_kv_buffer is never called: that path is declared as a skip in the registry, and this
module models the set_kv_buffer path.
"""
from __future__ import annotations

from backends.context import WriteRequest
from backends.era_calls import FOR_BATCH, kv_write, write_loc
from backends.flashinfer import kv_write_scales


def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    loc, keywords = write_loc(req, era, loc=req.forward_batch.out_cache_loc,
                              swa_loc=req.metadata.swa_out_cache_loc, current=FOR_BATCH)
    kv_write(req, loc, keywords, req.k, req.v, kv_write_scales(req, era))
