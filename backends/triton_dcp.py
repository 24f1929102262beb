"""triton under --dcp-size > 1 (layers/attention/triton_backend.py `_set_kv_buffer`, 0.5.23):
a decode-context-parallel rank's MHA write.

Each rank keeps the tokens whose position is its own. The backend hands the pool the rank-local
slot, out_cache_loc // dcp_size, in a KVWriteLoc without swa_loc that carries the batch's
physical mark, and a mask: positions % dcp_size == dcp_rank where the batch's positions are as
many as its locs, else the batch's dcp_kv_mask (which only a ROCm batch carries: None here). The
pool divides and casts every token as usual, then stores only the tokens the mask keeps. The
branches before the write are triton's own (backends/triton.py); the scenarios are the DCP rank's
(Geometry.dcp_size, dcp_rank; Forward.positions), which no other call site runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import torch

from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.era_calls import FOR_BATCH, layer_scales, scale_args, write_loc
from backends.sglang_names import DCP_MASK
from backends.skips import no_cross_attention
from backends.triton import REAL_CODE
from backends.write_loc_fields import write_loc_fields
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

DCP_FOCUS = {
    mode: ("dcp-rank", "dcp-rank-scaled", "dcp-rank-unsaved") for mode in EXTEND_AND_DECODE
}


def rank_loc(req: WriteRequest, era: str) -> Any:
    """KVWriteLoc(out_cache_loc // dcp_size, physical=<the batch's mark>): the batch's own
    KVWriteLoc with its loc replaced, so the mark is whatever the SUT's for_batch gives."""
    batch_loc, _ = write_loc(
        req, era, loc=req.forward_batch.out_cache_loc, swa_loc=None, current=FOR_BATCH
    )
    loc_field = write_loc_fields(type(batch_loc))[0]
    return dataclasses.replace(
        batch_loc, **{loc_field: getattr(batch_loc, loc_field) // req.dcp_size}
    )


def rank_mask(req: WriteRequest) -> Optional[torch.Tensor]:
    """positions % dcp_size == dcp_rank where the batch has a position per loc."""
    positions = req.forward_batch.positions
    if positions is not None and positions.numel() == req.forward_batch.out_cache_loc.numel():
        return positions % req.dcp_size == req.dcp_rank
    return None  # the batch's dcp_kv_mask: a ROCm batch's only


@register_backend(
    name="triton_dcp",
    order=21,
    device_type="cuda",
    pool_kinds=names(MHA),
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    dtypes=BF16_AND_FP8,
    focus=DCP_FOCUS,
    writes_dcp_rank=True,
    skips=(no_cross_attention("triton_dcp", "triton_backend.py"),),
    real_code=REAL_CODE,
    summary="triton's MHA write on a DCP rank: KVWriteLoc(out_cache_loc // dcp_size) and "
    "dcp_kv_mask = positions % dcp_size == dcp_rank",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    loc = rank_loc(req, era)
    mask = {DCP_MASK: rank_mask(req)}
    k_scale, v_scale = layer_scales(req)
    if mode == "decode":
        scales = scale_args(k_scale, v_scale)
        req.pool.set_kv_buffer(req.layer, loc, req.k, req.v, *scales, **mask)
    elif k_scale is None:
        req.pool.set_kv_buffer(req.layer, loc, req.k, req.v, **mask)
    else:  # extend clones k and v before a scaled write, as for any rank
        req.pool.set_kv_buffer(
            req.layer, loc, req.k.clone(), req.v.clone(), k_scale, v_scale, **mask
        )
