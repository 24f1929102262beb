"""flashinfer (layers/attention/flashinfer_backend.py, CUDA; MHA only).

Three write sites with one call: extend on the paged path writes before attention, extend on
the ragged path writes after attention (attention reads the caller's k/v before the pool's
in-place division), and decode. The loc is the encoder loc on cross-attention layers, paired
from 0.5.13 with the decoder's SWA loc. 0.5.23 takes its scales from `_kv_write_scales`, which
is (None, None) when the KV-cache quant method supplies global scales (FP4 pools).
"""

from __future__ import annotations

from backends.call_shapes import ATTENTION, LAYER_SCALES, CallSiteModel, swa_site
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, MHA_POOLS, register_backend
from backends.era_calls import decoder_swa, kv_write, layer_scales, write_loc
from backends.skips import BackendSkip, never

PAGED, RAGGED, DECODE = "extend", "extend_ragged", "decode"


def kv_write_scales(req: WriteRequest, era: str) -> tuple:
    if era == "current" and req.metadata.kv_quant_needs_global_scale:
        return None, None
    return layer_scales(req)


CENSUS = CallSiteModel(
    (ATTENTION + "flashinfer_backend.py",),
    swa_site(
        "cache_loc",
        LAYER_SCALES,
        current="for_layer",
        current_scales=("*self._kv_write_scales(layer)",),
    ),
)


@register_backend(
    name="flashinfer",
    order=30,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MHA_POOLS,
    modes=(PAGED, RAGGED, DECODE),
    dtypes=BF16_ONLY,
    summary="paged extend writes before attention, ragged extend after; 0.5.23 _kv_write_scales",
    skips=(
        BackendSkip(
            "global-scale-quant",
            "FP4 KV caches",
            "0.5.23 passes (None, None) when "
            "the quant method supplies global scales; no FP4 pool kind yet (modelled "
            "by Metadata.kv_quant_needs_global_scale)",
            never,
            "flashinfer_backend.py 0.5.23",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    # The ragged path's attention has already consumed k and v here; nothing the pool does to
    # them afterwards can reach it. The paged path writes first and attends over the cache.
    if not req.save_kv_cache:
        return
    loc, keywords = write_loc(req, era, loc=req.cache_loc(), swa_loc=decoder_swa(req))
    kv_write(req, loc, keywords, req.k, req.v, kv_write_scales(req, era))
