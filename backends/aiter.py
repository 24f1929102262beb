"""aiter (layers/attention/aiter_backend.py, ROCm; MHA and MLA).

Scales are descales: with an fp8 KV cache `layer.k_scale` or, when None, the backend's [1.0]
tensor (v falls back to self.k_scale until 0.5.14 and self.v_scale in 0.5.23: the same value);
without fp8 both are None. Extend writes the encoder loc on cross-attention layers; decode always
writes out_cache_loc. Until 0.5.14 decode passed no scales at all; 0.5.23 passes the descales.
MLA writes the full latent row through set_kv_buffer without scales; 0.5.14's MLA decode hands
it a KVWriteLoc (the door of PR #27695's review bug).
Not modelled (registry skips): SWA pools force unified attention, whose reshape_and_cache kernel
translates inside and bypasses set_kv_buffer; the 5-D vectorised cache; the fused fp8 write.
"""
from __future__ import annotations

import torch

from backends.context import WriteRequest
from backends.era_calls import FOR_BATCH, bare_loc, decoder_swa, kv_cache_is_fp8, kv_write, write_loc


def descales(req: WriteRequest) -> tuple:
    if not kv_cache_is_fp8(req):
        return None, None
    one = torch.ones(1, dtype=torch.float32, device=req.k.device)   # self.k_scale == self.v_scale
    k_scale, v_scale = req.layer.k_scale, req.layer.v_scale
    return (one if k_scale is None else k_scale), (one if v_scale is None else v_scale)


def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    swa = decoder_swa(req)
    if req.is_mla:
        if mode == "decode":
            ocl = req.forward_batch.out_cache_loc
            loc = ocl if era in ("legacy", "kwarg") else (
                req.api.KVWriteLoc(ocl, swa) if era == "bundled"
                else write_loc(req, era, loc=ocl, swa_loc=None, current=FOR_BATCH)[0])
        else:
            loc = bare_loc(req, era, loc=req.cache_loc())
        kv_write(req, loc, {}, req.mla_k, req.v)
        return
    if mode == "decode":
        loc, keywords = write_loc(req, era, loc=req.forward_batch.out_cache_loc, swa_loc=swa,
                                  current=FOR_BATCH)
        kv_write(req, loc, keywords, req.k, req.v, descales(req) if era == "current" else ())
        return
    loc, keywords = write_loc(req, era, loc=req.cache_loc(), swa_loc=swa)
    kv_write(req, loc, keywords, req.k, req.v, descales(req))
