"""intel_amx (layers/attention/intel_amx_backend.py, CPU AMX; MHA here, MLA only in 0.5.23).

Extend: 0.5.12 writes out_cache_loc even on cross-attention layers and passes no scales; 0.5.13+
writes the encoder loc there and drops the SWA loc for it; 0.5.23 passes `layer.k_scale_float`
and `v_scale_float` when the key buffer is fp8. Decode: the attention kernel
(`decode_attention_cpu(..., k, v, cache_loc)`) stores K/V into the layer's buffers itself,
ignoring save_kv_cache; until 0.5.14 it stored a SWA layer at the untranslated loc. 0.5.23 routes
an fp8 cache through set_kv_buffer (honouring save_kv_cache) and gives the kernel the SWA loc.
"""
from __future__ import annotations

from typing import Any

import torch

from backends.context import WriteRequest
from backends.era_calls import BARE, decoder_swa, kv_cache_is_fp8, kv_write, write_loc


def _kernel_store(req: WriteRequest, loc: torch.Tensor) -> None:
    """What the decode kernel does to the cache: a plain row store, no scale, no pool call."""
    layer_id = req.layer.layer_id
    for buffer, values in ((req.pool.get_key_buffer(layer_id), req.k),
                           (req.pool.get_value_buffer(layer_id), req.v)):
        buffer[loc.long()] = values.to(buffer.dtype)


def _scaled_fp8(req: WriteRequest) -> dict[str, Any]:
    if not kv_cache_is_fp8(req):
        return {}
    return {"k_scale": req.layer.k_scale_float, "v_scale": req.layer.v_scale_float}


def _pool_write(req: WriteRequest, era: str) -> None:
    loc, keywords = write_loc(req, era, loc=req.cache_loc(), swa_loc=decoder_swa(req, cross="dropped"),
                              current=BARE)
    extra = _scaled_fp8(req) if era == "current" else {}
    req.pool.set_kv_buffer(req.layer, loc, req.k, req.v, **keywords, **extra)


def write(req: WriteRequest, era: str, mode: str) -> None:
    if mode == "decode":
        if era == "current" and kv_cache_is_fp8(req):
            if req.save_kv_cache:
                _pool_write(req, era)
            return   # k = v = None afterwards: the kernel stores nothing
        if era == "legacy":
            loc = req.forward_batch.out_cache_loc
        elif era == "current" and req.layer.sliding_window_size > 0 and not req.layer.is_cross_attention:
            loc = req.metadata.swa_out_cache_loc[: req.forward_batch.out_cache_loc.shape[0]]
        else:
            loc = req.cache_loc()
        _kernel_store(req, loc)
        return
    if not req.save_kv_cache:
        return
    if era == "legacy":
        kv_write(req, req.forward_batch.out_cache_loc, {}, req.k, req.v)
    else:
        _pool_write(req, era)
