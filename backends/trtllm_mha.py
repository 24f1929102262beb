"""trtllm_mha (layers/attention/trtllm_mha_backend.py, CUDA SM90+; MHA; a flashinfer subclass).

Always writes out_cache_loc (no cross-attention); 0.5.23 uses KVWriteLoc.for_batch and
flashinfer's `_kv_write_scales`. With an fp8 KV cache a fused kernel writes the cache itself
and set_kv_buffer is never called: that path is declared as a skip on the entry below, and this
module models the set_kv_buffer path.
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
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MHA_POOLS, register_backend
from backends.era_calls import FOR_BATCH, kv_write, write_loc
from backends.flashinfer import kv_write_scales
from backends.real_code import RealCode, pool_quant_method
from backends.skips import BackendSkip, fp8_cache, no_cross_attention
from pools.kinds.layout import MHA_HND
from pools.kinds.spec import names

FUSED_FP8_WRITE = BackendSkip(
    "fused-fp8-write",
    "fp8 KV caches",
    "with an fp8 cache a fused kernel "
    "(fused_fp8_set_kv_buffer, 0.5.23 fused_fp8_qkv_kv_cache) writes the cache and set_kv_buffer "
    "is never called; the set_kv_buffer path is modelled",
    fp8_cache,
    "trtllm_mha_backend.py",
)


# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "bundled"),
        (branch("forward_extend", "not use_fused_fp8_path", "save_kv_cache and k is not None"),),
    ),
    (
        ("legacy", "bundled", "current"),
        (branch("forward_decode", "not use_fused_fp8_path", "save_kv_cache and k is not None"),),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_decode",
                "not use_fused_fp8_path",
                "save_kv_cache and k is not None",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "not use_fused_fp8_path",
                "save_kv_cache and k is not None",
                "not self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "not use_fused_fp8_path",
                "save_kv_cache and k is not None",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "not use_fused_fp8_path",
                "save_kv_cache and k is not None",
                "not self.use_sliding_window_kv_pool",
            ),
        ),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "not use_fused_fp8_path",
                "save_kv_cache and k is not None",
                "not cp_active",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "trtllm_mha_backend.py",),
    swa_site(
        "out_cache_loc",
        LAYER_SCALES,
        current="for_batch",
        current_scales=("*self._kv_write_scales(layer)",),
    ),
    branches=BRANCHES,
)


@register_backend(
    name="trtllm_mha",
    real_code=RealCode(
        "sglang.srt.layers.attention.trtllm_mha_backend",
        "TRTLLMHAAttnBackend",
        fields=lambda req, mode: {
            **pool_quant_method(req),
            "uses_trtllm_gen_native_fp4": False,
            "decode_uses_native_fp4": False,  # 0.5.16-0.5.20: an FP4 decode access only
            "data_type": req.pool.dtype,  # 0.5.14: model_runner.kv_cache_dtype, the pool's dtype
        },
    ),
    order=40,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MHA_POOLS + names(MHA_HND),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_ONLY,
    summary="out_cache_loc only; 0.5.23 KVWriteLoc.for_batch",
    skips=(no_cross_attention("trtllm_mha", "trtllm_mha_backend.py"), FUSED_FP8_WRITE),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    loc, keywords = write_loc(
        req,
        era,
        loc=req.forward_batch.out_cache_loc,
        swa_loc=req.metadata.swa_out_cache_loc,
        current=FOR_BATCH,
    )
    kv_write(req, loc, keywords, req.k, req.v, kv_write_scales(req, era))
