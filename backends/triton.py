"""triton (layers/attention/triton_backend.py, CUDA/ROCm; the SWA pool is never MLA).

Always writes out_cache_loc (no cross-attention handling in any release). Extend protects the
caller's tensors: a scaled MHA write passes clones (the pool divides in place), a scaled MLA
write divides a clone of k itself and passes no scales (the MLA pool takes none). Decode does
not clone: MLA divides the caller's k in place before the write, and a scaled MHA write lets the
pool divide the caller's k and v. 0.5.14 passes KVWriteLoc to the MLA set_kv_buffer in every
extend branch (the door of PR #27695's review bug); 0.5.23 uses KVWriteLoc.for_batch.
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    KV,
    LAYER_SCALES,
    CallSiteModel,
    Shape,
    branch,
    eras_branches,
    merge,
    swa_site,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MHA_POOLS, MLA_POOLS, register_backend
from backends.era_calls import FOR_BATCH, bare_loc, kv_write, layer_scales, scale_args, write_loc
from backends.real_code import RealCode
from backends.skips import BackendSkip, never, no_cross_attention
from pools.kinds.composite import SWA_UNIFIED
from pools.kinds.spec import names

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "kwarg", "bundled", "current"),
        (branch("forward_decode", "save_kv_cache", "self.use_mla"),),
    ),
    (
        ("legacy", "bundled", "current"),
        (
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "layer.k_scale is None",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "layer.k_scale is not None",
                "self.use_mla",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "layer.k_scale is not None",
                "not self.use_mla",
            ),
            branch("forward_decode", "save_kv_cache", "not self.use_mla"),
        ),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
                "layer.k_scale is None",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
                "layer.k_scale is not None",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "layer.k_scale is None",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "layer.k_scale is not None",
                "self.use_mla",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "layer.k_scale is not None",
                "not self.use_mla",
            ),
            branch(
                "forward_decode",
                "save_kv_cache",
                "not self.use_mla",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "save_kv_cache",
                "not self.use_mla",
                "not self.use_sliding_window_kv_pool",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "triton_backend.py",),
    merge(
        swa_site("out_cache_loc", current="for_batch"),
        swa_site("out_cache_loc", LAYER_SCALES, current="for_batch"),
        {era: (Shape(KV, "bare", "out_cache_loc"),) for era in ("bundled",)},
    ),
    branches=BRANCHES,
)


REAL_CODE = RealCode(
    "sglang.srt.layers.attention.triton_backend",
    "TritonAttnBackend",
    # The DCP group its __init__ reads from get_parallel(): one rank, but under triton_dcp.
    fields=lambda req, mode: {
        "dcp_size": req.dcp_size,
        "dcp_rank": req.dcp_rank,
        "is_draft_runner": False,
        "use_dense_fp8_chunked_prefill": False,
    },
    # 0.5.15-0.5.20 carry the unified pool's physical full loc (KVWriteLoc.full_loc) in the
    # metadata: None for a pool that is not unified, as their init_forward_metadata sets it.
    metadata=lambda req, mode: {"out_cache_loc_full_physical": None},
    model_kinds=names(SWA_UNIFIED),
    why_model="swa_unified: the release's class takes the window layers' loc from the unified "
    "pool's allocators (translate_loc_from_full_to_swa asserts attach_allocators), which kvh does "
    "not build; the call-site model writes the release's pool",
)


@register_backend(
    name="triton",
    order=20,
    census=CENSUS,
    device_type="cuda",
    # swa_unified: the call that omits the scales when both are None (0.5.23) reaches
    # UnifiedSWAKVPool's defaults, which no other call site does.
    pool_kinds=MHA_POOLS + MLA_POOLS + names(SWA_UNIFIED),
    modes=EXTEND_AND_DECODE,
    # fp8 too: the MLA extend divides a clone of k by k_scale before the pool's fp8 cast (the
    # path of #34765), and decode divides the caller's k in place.
    dtypes=BF16_AND_FP8,
    mla_input="latent",
    real_code=REAL_CODE,
    summary="out_cache_loc only; extend clones (MHA) or divides a clone (MLA); decode divides the "
    "caller's MLA k in place",
    skips=(
        no_cross_attention("triton", "triton_backend.py"),
        BackendSkip(
            "dense-fp8-chunked",
            "0.5.23 fp8 q/k/v, 12 heads, prefix cache",
            "_forward_dense_fp8_chunked_mha writes nothing",
            never,
            "triton_backend.py 0.5.23",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    ocl, swa = req.forward_batch.out_cache_loc, req.metadata.swa_out_cache_loc
    k_scale, v_scale = layer_scales(req)
    k = req.mla_k if req.is_mla else req.k
    if mode == "decode":
        if req.is_mla:
            if k_scale is not None:
                k.div_(k_scale)  # in place: k is not used after the write
            # MLA decode passed a bare loc until 0.5.23, then for_batch(fb, swa_loc=swa).
            loc, keywords = (
                (bare_loc(req, era, loc=ocl), {})
                if era != "current"
                else write_loc(req, era, loc=ocl, swa_loc=swa, current=FOR_BATCH)
            )
            kv_write(req, loc, keywords, k, req.v)
            return
        loc, keywords = write_loc(req, era, loc=ocl, swa_loc=swa, current=FOR_BATCH)
        # 0.5.23's _set_kv_buffer omits the scales when both are None.
        scales = scale_args(k_scale, v_scale) if era == "current" else (k_scale, v_scale)
        kv_write(req, loc, keywords, k, req.v, scales)
        return
    loc, keywords = write_loc(req, era, loc=ocl, swa_loc=swa, current=FOR_BATCH)
    if k_scale is None:
        kv_write(req, loc, keywords, k, req.v)
    elif req.is_mla:
        kv_write(req, loc, keywords, k.clone().div_(k_scale), req.v)
    else:
        kv_write(req, loc, keywords, k.clone(), req.v.clone(), (k_scale, v_scale))
