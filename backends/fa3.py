"""fa3 (flashattention_backend.py, CUDA) and the sites that copy it (musa, xpu).

MHA writes `set_kv_buffer(layer, <xloc>, k, v, layer.k_scale, layer.v_scale)`; MLA writes
`set_mla_kv_buffer(layer, <xloc>, k, k_rope)`. The loc is the encoder loc on cross-attention
layers, paired from 0.5.13 with the decoder's swa_out_cache_loc. Extend and decode call the pool
the same way; the CP branch of extend is modelled by backends.context_parallel.
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    LAYER_SCALES,
    MLA,
    CallSiteModel,
    bare_site,
    branch,
    eras_branches,
    merge,
    swa_site,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MHA_POOLS, MLA_POOLS, register_backend
from backends.era_calls import FOR_LAYER, bare_loc, decoder_swa, kv_write, layer_scales, write_loc
from backends.real_code import GPU_FUNCTION, RealCode
from backends.skips import FP4_NON_FINITE, BackendSkip, never
from pools.kinds.layout import MHA_FP4, MLA_FP4
from pools.kinds.spec import names


def fa3_style_write(
    req: WriteRequest, era: str, *, current: str, mla_loc_wrapped: bool, k_rope=None
) -> None:
    """The fa3 call shape. `current` is how 0.5.23 builds its KVWriteLoc; `mla_loc_wrapped` says
    whether the 0.5.23 MLA site wraps the loc (fa3: for_layer) or keeps it bare (musa, xpu)."""
    if not req.save_kv_cache:
        return
    cache_loc = req.cache_loc()
    if req.is_mla:
        # The MLA site never carries swa_loc (0.5.13 checks use_mla first in extend).
        loc = bare_loc(req, era, loc=cache_loc, current=current) if mla_loc_wrapped else cache_loc
        req.pool.set_mla_kv_buffer(req.layer, loc, req.k, req.k_rope if k_rope is None else k_rope)
        return
    loc, keywords = write_loc(req, era, loc=cache_loc, swa_loc=decoder_swa(req), current=current)
    kv_write(req, loc, keywords, req.k, req.v, layer_scales(req))


# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
# The kwarg era's decode: by pool (SWA, MHA, MLA). musa's subclass file has the same lines.
KWARG_DECODE_BRANCHES = (
    branch("forward_decode", "k is not None", "save_kv_cache", "self.use_sliding_window_kv_pool"),
    branch(
        "forward_decode",
        "k is not None",
        "save_kv_cache",
        "not self.use_sliding_window_kv_pool",
        "not self.use_mla",
    ),
    branch(
        "forward_decode",
        "k is not None",
        "save_kv_cache",
        "not self.use_sliding_window_kv_pool",
        "self.use_mla",
    ),
)
BRANCHES = eras_branches(
    (
        ("legacy",),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode) and (not self.fa_skip_kv_cache)",
                "not self.use_mla",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode) and (not self.fa_skip_kv_cache)",
                "self.use_mla",
            ),
        ),
    ),
    (
        ("legacy", "bundled", "current"),
        (
            branch("forward_decode", "k is not None", "save_kv_cache", "not self.use_mla"),
            branch("forward_decode", "k is not None", "save_kv_cache", "self.use_mla"),
        ),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "not self.use_mla",
                "not is_cp_mode",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "not self.use_mla",
                "not is_cp_mode",
                "not self.use_sliding_window_kv_pool",
            ),
            *KWARG_DECODE_BRANCHES,
        ),
    ),
    (
        ("kwarg", "bundled"),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "self.use_mla",
            ),
        ),
    ),
    (
        ("bundled",),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "not self.use_mla",
                "not is_cp_mode",
            ),
        ),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "self.use_mla",
                "not cp_active",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not self.fa_skip_kv_cache)",
                "not self.use_mla",
                "not cp_active",
            ),
        ),
    ),
)


# The release's FlashAttention backend, driven on a CPU (its kernels are CUDA-only; the write
# before them is not). backends/context_parallel.py drives it under a CP group too.
FA3_REAL_CODE = RealCode(
    "sglang.srt.layers.attention.flashattention_backend",
    "FlashAttentionBackend",
    standins={"sgl_kernel": {"merge_state_v2": GPU_FUNCTION}},
    fields=lambda req, mode: {
        "fa_impl_ver": 3,
        "fa_skip_kv_cache": False,
        "kv_cache_is_mxfp8": False,
    },
)


CENSUS = CallSiteModel(
    (ATTENTION + "flashattention_backend.py",),
    merge(
        swa_site("cache_loc", LAYER_SCALES, current="for_layer"),
        bare_site(MLA, "cache_loc", current="for_layer"),
    ),
    branches=BRANCHES,
)


@register_backend(
    name="fa3",
    order=10,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MHA_POOLS + MLA_POOLS + names(MHA_FP4, MLA_FP4),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    real_code=FA3_REAL_CODE,
    summary="MHA set_kv_buffer with layer scales, MLA set_mla_kv_buffer; encoder loc paired with "
    "the decoder's SWA loc; 0.5.23 KVWriteLoc.for_layer",
    skips=(
        BackendSkip(
            "fused-rope-store",
            "0.5.23 mimo_v2/dspark",
            "the model stores K/V itself "
            "(get_fused_kv_write_buffers) and calls attention with save_kv_cache=False: "
            "no pool call to model",
            never,
            "flashattention_backend.py 0.5.23",
        ),
        FP4_NON_FINITE,
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    fa3_style_write(req, era, current=FOR_LAYER, mla_loc_wrapped=True)
