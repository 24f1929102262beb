"""flashinfer (layers/attention/flashinfer_backend.py, CUDA; MHA only).

Three write sites with one call: extend on the paged path writes before attention, extend on
the ragged path writes after attention (attention reads the caller's k/v before the pool's
in-place division), and decode. The loc is the encoder loc on cross-attention layers, paired
from 0.5.13 with the decoder's SWA loc. 0.5.23 takes its scales from `_kv_write_scales`, which
is (None, None) when the KV-cache quant method supplies global scales (FP4 pools).
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    LAYER_SCALES,
    CallSiteModel,
    branch,
    eras_branches,
    swa_site,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, MHA_POOLS, register_backend
from backends.era_calls import decoder_swa, kv_write, layer_scales, write_loc
from backends.real_code import NO_ATTENTION, RealCode, pool_quant_method
from backends.skips import BackendSkip, never
from scenarios.model import Scenario

PAGED, RAGGED, DECODE = "extend", "extend_ragged", "decode"


def kv_write_scales(req: WriteRequest, era: str) -> tuple:
    if era == "current" and req.metadata.kv_quant_needs_global_scale:
        return None, None
    return layer_scales(req)


def _unequal_head_dims_on_ragged(scenario: Scenario, mode: str) -> bool:
    g = scenario.geometry
    return mode == RAGGED and (g.v_head_dim or g.head_dim) != g.head_dim


# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "bundled"),
        (
            branch(
                "forward_extend",
                "not self.forward_metadata.use_ragged",
                "k is not None",
                "save_kv_cache",
            ),
        ),
    ),
    (
        ("legacy", "bundled", "current"),
        (
            branch("forward_extend", "self.forward_metadata.use_ragged", "save_kv_cache"),
            branch("forward_decode", "k is not None", "save_kv_cache"),
        ),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "self.forward_metadata.use_ragged",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "self.forward_metadata.use_ragged",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "not self.forward_metadata.use_ragged",
                "k is not None",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "not self.forward_metadata.use_ragged",
                "k is not None",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "k is not None",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "k is not None",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
            ),
        ),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "not self.forward_metadata.use_ragged",
                "k is not None and save_kv_cache",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "flashinfer_backend.py",),
    swa_site(
        "cache_loc",
        LAYER_SCALES,
        current="for_layer",
        current_scales=("*self._kv_write_scales(layer)",),
    ),
    branches=BRANCHES,
)


@register_backend(
    name="flashinfer",
    real_code=RealCode(
        "sglang.srt.layers.attention.flashinfer_backend",
        "FlashInferAttnBackend",
        fields=lambda req, mode: {
            **pool_quant_method(req),
            "prefill_uses_dequant_workspace": False,
            "decode_uses_dequant_workspace": False,
            "num_wrappers": 1,
            "is_dllm_model": False,
            # The ragged path attends before it writes; the attention output is not written.
            "prefill_wrapper_ragged": NO_ATTENTION,
        },
        metadata=lambda req, mode: {
            "prefill_wrappers": NO_ATTENTION,
            "decode_wrappers": NO_ATTENTION,
            "use_ragged": mode == RAGGED,
            "extend_no_prefix": True,  # one ragged kernel instead of two merged (attention only)
        },
    ),
    order=30,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MHA_POOLS,
    modes=(PAGED, RAGGED, DECODE),
    dtypes=BF16_AND_FP8,
    summary="paged extend writes before attention, ragged extend after; 0.5.23 _kv_write_scales",
    skips=(
        BackendSkip(
            "ragged-equal-head-dims",
            "ragged extend with v_head_dim != head_dim",
            "the ragged path views v as (-1, heads, head_dim) before its write, so the release "
            "raises there: flashinfer does not serve that geometry on the ragged path",
            _unequal_head_dims_on_ragged,
            "flashinfer_backend.py 0.5.14, 0.5.23 forward_extend",
        ),
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
