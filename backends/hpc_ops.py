"""hpc_ops (layers/attention/hpc_ops_backend.py 0.5.23, CUDA SM90: Tencent's HPC-Ops paged MHA).

Extend and decode write `set_kv_buffer(layer, KVWriteLoc(forward_batch.out_cache_loc), k, v,
layer.k_scale, layer.v_scale)` when k is given: a bare KVWriteLoc (no SWA loc: the backend
refuses sliding-window layers), the layer's scales. Its FP8 models store K/V in a fused
QKNorm+RoPE+quantise kernel (`fused_qk_rope_store_kv_fp8`) and call attention with
save_kv_cache=False: no pool call to model there. Decoder-only, so cross-attention is a skip.
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
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, register_backend
from backends.era_calls import BARE, bare_loc, kv_write, layer_scales
from backends.real_code import GPU_FUNCTION, RealCode
from backends.skips import no_cross_attention
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

FILE = "hpc_ops_backend.py"

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("current",),
        (
            branch("forward_extend", "save_kv_cache and k is not None"),
            branch("forward_decode", "save_kv_cache and k is not None"),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + FILE,),
    {"current": (Shape(KV, "KVWriteLoc", "out_cache_loc", scales=LAYER_SCALES),)},
    unmodelled_functions={
        "fused_qk_rope_store_kv_fp8": "the FP8 models' fused store, a GPU kernel that bypasses "
        "the pool's doors"
    },
    branches=BRANCHES,
)


@register_backend(
    name="hpc_ops",
    order=86,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=names(MHA),  # it refuses sliding-window layers (_check_layer_supported)
    modes=EXTEND_AND_DECODE,
    eras=("current",),  # the file came with 0.5.23
    dtypes=BF16_AND_FP8,
    # Both forwards import `hpc` (Tencent HPC-Ops, SM90) and check the layer
    # (_check_layer_supported: no sliding window, no logit cap, softmax scale head_dim ** -0.5)
    # before the write; the HPC-Ops kernels come after it, where the driver stops the forward.
    # The instance is made without __init__, which asks for an SM90 GPU and the `hpc` package.
    real_code=RealCode(
        "sglang.srt.layers.attention.hpc_ops_backend",
        "HPCOpsAttnBackend",
        standins={
            "hpc": dict.fromkeys(
                (
                    "attention_with_kvcache_prefill_bf16",
                    "attention_with_kvcache_prefill_fp8",
                    "attention_decode_bf16",
                    "attention_decode_fp8",
                ),
                GPU_FUNCTION,
            )
        },
    ),
    summary="KVWriteLoc(out_cache_loc) with the layer's scales; MHA without SWA",
    skips=(no_cross_attention("hpc_ops", FILE + " 0.5.23"),),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    loc = bare_loc(req, era, loc=req.forward_batch.out_cache_loc, current=BARE)
    kv_write(req, loc, {}, req.k, req.v, layer_scales(req))
