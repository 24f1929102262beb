"""torch_flex (layers/attention/torch_flex_backend.py, any device: torch's flex_attention).

Every release (0.5.12 to 0.5.23) writes `set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)`
before the attention in both extend and decode: a bare loc in every era (0.5.23 included, no
KVWriteLoc), no scales (the pool's defaults apply), no SWA loc, so plain MHA pools only.
Cross-attention raises NotImplementedError after the write, so encoder-decoder scenarios are a
skip, as for triton.
"""

from __future__ import annotations

from backends.call_shapes import ATTENTION, KV, CallSiteModel, bare_site, branch, eras_branches
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.real_code import RealCode
from backends.skips import no_cross_attention
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

FILE = "torch_flex_backend.py"


def bare_loc_census(file: str) -> CallSiteModel:
    """The census of a file whose forwards each make one bare-loc write under `if
    save_kv_cache:` in every era (torch_flex's, and wave's: derived from 0.5.12, 0.5.13, 0.5.14
    and 0.5.23 by harness/sut/probe/census_branches.py)."""
    branches = eras_branches(
        (
            ("legacy", "kwarg", "bundled", "current"),
            (
                branch("forward_extend", "save_kv_cache"),
                branch("forward_decode", "save_kv_cache"),
            ),
        ),
    )
    return CallSiteModel((ATTENTION + file,), bare_site(KV, "out_cache_loc"), branches=branches)


CENSUS = bare_loc_census(FILE)


@register_backend(
    name="torch_flex",
    order=82,
    census=CENSUS,
    device_type="cpu",
    # Not swa_mha: with no SWA loc, a SWA pool's door raises from 0.5.13 on (the release's
    # and the judge's alike: measured, every kwarg-to-current check on swa_mha both raised).
    pool_kinds=names(MHA),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    # Not its own __init__: it raises torch._dynamo's cache_size_limit to 1024 for the whole
    # process (the loader keeps it at 64, docs/suts.md); the write reads only the pool it keeps.
    # Its init_forward_metadata builds flex block masks, which the write does not read.
    real_code=RealCode("sglang.srt.layers.attention.torch_flex_backend", "TorchFlexAttnBackend"),
    summary="bare out_cache_loc, no scales, every era",
    skips=(no_cross_attention("torch_flex", FILE + " 0.5.12-0.5.23"),),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    """The call torch_flex (and wave) make in every era: the batch's loc, bare, no scales."""
    if not req.save_kv_cache:
        return
    req.pool.set_kv_buffer(req.layer, req.forward_batch.out_cache_loc, req.k, req.v)
