"""aiter (layers/attention/aiter_backend.py, ROCm; MHA and MLA).

Scales are descales: with an fp8 KV cache `layer.k_scale` or, when None, the backend's [1.0]
tensor (v falls back to self.k_scale until 0.5.14 and self.v_scale in 0.5.23: the same value);
without fp8 both are None. Extend writes the encoder loc on cross-attention layers; decode always
writes out_cache_loc. Until 0.5.14 decode passed no scales, except on the vectorised 5-D cache
(0.5.13 and 0.5.14 `kv_cache_is_vectorized_5d`: the descales, found by `kvh sut check`'s census
of those wheels); 0.5.23 passes the descales on every pool.
MLA writes the full latent row through set_kv_buffer without scales; 0.5.14's MLA decode hands
it a KVWriteLoc (the door of PR #27695's review bug).
Not modelled (skips on the entry below): SWA pools force unified attention, whose
reshape_and_cache kernel translates inside and bypasses set_kv_buffer; the fused fp8 write.
"""

from __future__ import annotations

import torch

from backends.call_shapes import (
    ATTENTION,
    KV,
    LAYER_SCALES,
    MLA,
    SWA,
    CallSiteModel,
    Shape,
    bare_site,
    branch,
    eras_branches,
    merge,
    swa_site,
)
from backends.context import WriteRequest
from backends.divergences import (
    CHANGED,
    SCALED_BYTES,
    Applies,
    KnownDivergence,
    every_forward,
    every_layer,
    fp8_scaled,
)
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MLA_POOLS, register_backend
from backends.era_calls import (
    FOR_BATCH,
    bare_loc,
    decoder_swa,
    kv_cache_is_fp8,
    kv_write,
    write_loc,
)
from backends.real_code import RealCode
from backends.skips import BackendSkip, decode_cross_attention, swa_pool
from pools.kinds.layout import MHA_AITER5D
from pools.kinds.spec import names
from pools.kinds.token_major import MHA

VECTORISED_5D_POOL = "MHATokenToKVPoolAiter5D"  # pools/builtin/layouts/kinds.py, kind mha_aiter5d
VECTORISED_5D_KIND = MHA_AITER5D.name


def decode_passes_descales(req: WriteRequest, era: str) -> bool:
    """0.5.23 on every pool; 0.5.13 and 0.5.14 on the vectorised 5-D cache only (0.5.12 has no
    5-D path: aiter_backend.py forward_decode of each wheel)."""
    vectorised = VECTORISED_5D_POOL in {cls.__name__ for cls in type(req.pool).__mro__}
    return era == "current" or (vectorised and era in ("kwarg", "bundled"))


def descales(req: WriteRequest) -> tuple:
    if not kv_cache_is_fp8(req):
        return None, None
    one = torch.ones(1, dtype=torch.float32, device=req.k.device)  # self.k_scale == self.v_scale
    k_scale, v_scale = req.layer.k_scale, req.layer.v_scale
    return (one if k_scale is None else k_scale), (one if v_scale is None else v_scale)


def _only_5d(applies: Applies) -> Applies:
    return lambda scenario, mode: (
        scenario.geometry.pool == VECTORISED_5D_KIND and applies(scenario, mode)
    )


def _not_5d(applies: Applies) -> Applies:
    return lambda scenario, mode: (
        scenario.geometry.pool != VECTORISED_5D_KIND and applies(scenario, mode)
    )


DECODE_DESCALES = KnownDivergence(
    "aiter-decode-descales",
    ("current",),
    CHANGED,
    _not_5d(fp8_scaled("decode")),
    every_forward,
    every_layer,
    frozenset({"bytes", "caller_tensors"}),
    SCALED_BYTES,
    "with an fp8 cache, aiter's decode set_kv_buffer passed no scales in 0.5.12-0.5.14 "
    "(extend passed k_descale/v_descale); 0.5.23 passes the descales in decode too, so "
    "the pool divides k and v (in place) where it used to only cast",
    evidence="diff of the 0.5.14 and 0.5.23 wheels, python/sglang/srt/layers/attention/"
    "aiter_backend.py forward_decode: set_kv_buffer gains k_descale, v_descale; no PR "
    "names the change",
)

DECODE_DESCALES_5D = KnownDivergence(
    "aiter-5d-decode-descales",
    ("kwarg", "bundled", "current"),
    CHANGED,
    _only_5d(fp8_scaled("decode")),
    every_forward,
    every_layer,
    frozenset({"bytes", "caller_tensors"}),
    SCALED_BYTES,
    "on the vectorised 5-D cache aiter's decode passes k_descale/v_descale from 0.5.13 "
    "(0.5.12 has no 5-D path and passes no scales in decode), so the pool divides k and v "
    "(in place) where the legacy call site only cast",
    evidence="kvh sut check census of the 0.5.12, 0.5.13 and 0.5.14 wheels: "
    "aiter_backend.py forward_decode, `if self.kv_cache_is_vectorized_5d:` "
    "set_kv_buffer(..., k_descale, v_descale) (0.5.13 lines 2544/2554, 0.5.14 line "
    "2383); no PR names the change",
)

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
NOT_UNIFIED_SWA = "not (self.use_triton_unified_attention and self.use_sliding_window_kv_pool)"
NOT_UNIFIED_FP8 = "not (self.use_triton_unified_attention and self.kv_cache_dtype == fp8_dtype)"
IS_5D = "self.kv_cache_is_vectorized_5d"
NOT_5D = "not self.kv_cache_is_vectorized_5d"
SWA_POOL = "self.use_sliding_window_kv_pool"
NOT_SWA_POOL = "not self.use_sliding_window_kv_pool"
BRANCHES = eras_branches(
    (
        ("legacy",),
        (
            branch(
                "forward_extend", "k is not None", "save_kv_cache", NOT_UNIFIED_SWA, "self.use_mla"
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_UNIFIED_SWA,
                "not self.use_mla",
            ),
            branch("forward_decode", "save_kv_cache", NOT_UNIFIED_SWA, NOT_UNIFIED_FP8),
        ),
    ),
    (
        ("kwarg",),
        (
            branch("forward_extend", "k is not None", "save_kv_cache", IS_5D, SWA_POOL),
            branch("forward_extend", "k is not None", "save_kv_cache", IS_5D, NOT_SWA_POOL),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "not self.use_mla",
                SWA_POOL,
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "not self.use_mla",
                NOT_SWA_POOL,
            ),
            branch("forward_decode", "save_kv_cache", IS_5D, SWA_POOL),
            branch("forward_decode", "save_kv_cache", IS_5D, NOT_SWA_POOL),
            branch(
                "forward_decode",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                NOT_UNIFIED_FP8,
                SWA_POOL,
            ),
            branch(
                "forward_decode",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                NOT_UNIFIED_FP8,
                NOT_SWA_POOL,
            ),
        ),
    ),
    (
        ("kwarg", "bundled"),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
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
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "not self.use_mla",
            ),
            branch("forward_decode", "save_kv_cache", NOT_5D, NOT_UNIFIED_SWA, NOT_UNIFIED_FP8),
        ),
    ),
    (
        ("bundled", "current"),
        (
            branch("forward_extend", "k is not None", "save_kv_cache", IS_5D),
            branch("forward_decode", "save_kv_cache", IS_5D),
        ),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "self.use_mla",
                "self.dcp_world_size > 1",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "self.use_mla",
                "not self.dcp_world_size > 1",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "not self.use_mla",
                "not self._use_fused_fp8_kv_write(layer)",
            ),
            branch("forward_decode", "save_kv_cache", NOT_5D, NOT_UNIFIED_SWA, "self.use_mla"),
            branch(
                "forward_decode",
                "save_kv_cache",
                NOT_5D,
                NOT_UNIFIED_SWA,
                "not self.use_mla",
                "not self._use_fused_fp8_kv_write(layer)",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "aiter_backend.py",),
    merge(
        swa_site("cache_loc", LAYER_SCALES, current="for_layer"),
        bare_site(KV, "cache_loc", current="for_layer"),
        {
            era: shapes
            for era, shapes in swa_site("out_cache_loc", current="for_batch").items()
            if era != "current"
        },
        # decode on the vectorised 5-D cache passes the descales from 0.5.13 (see
        # decode_passes_descales)
        {
            era: shapes
            for era, shapes in swa_site("out_cache_loc", LAYER_SCALES, current="for_batch").items()
            if era in ("kwarg", "bundled")
        },
        {
            "current": (
                Shape(KV, "for_batch", "out_cache_loc", SWA, scales=LAYER_SCALES),
                Shape(KV, "for_batch", "out_cache_loc"),
            )
        },
    ),
    unmodelled_shapes={
        "current": (
            (
                Shape(MLA, "for_layer", "cache_loc"),
                "the DCP branch (dcp_world_size > 1) of MLA extend; the harness pins DCP off",
            ),
        )
    },
    branches=BRANCHES,
)


@register_backend(
    name="aiter",
    real_code=RealCode(
        "sglang.srt.layers.attention.aiter_backend",
        "AiterAttnBackend",
        fields=lambda req, mode: {
            "kv_cache_dtype": req.pool.dtype,
            "kv_cache_is_vectorized_5d": False,
            "use_triton_unified_attention": False,
            "dcp_world_size": 1,
            "k_scale": torch.tensor([1.0], dtype=torch.float32),  # __init__'s descale default
            "v_scale": torch.tensor([1.0], dtype=torch.float32),
        },
    ),
    order=50,
    device_type="rocm",
    pool_kinds=names(MHA) + MLA_POOLS + names(MHA_AITER5D),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    mla_input="latent",
    divergences=(DECODE_DESCALES, DECODE_DESCALES_5D),
    census=CENSUS,
    summary="fp8 descales in extend; decode writes out_cache_loc and, until 0.5.23, no scales "
    "(but on the 5-D cache from 0.5.13); MLA latent row through set_kv_buffer",
    skips=(
        BackendSkip(
            "decode-cross-attention",
            "decode with cross-attention layers",
            "decode writes out_cache_loc on every layer (only extend uses the encoder loc)",
            decode_cross_attention,
            "aiter_backend.py",
        ),
        BackendSkip(
            "unified-swa",
            "SWA pools",
            "a SWA pool forces unified attention, whose "
            "reshape_and_cache kernel translates with the mapping itself and bypasses "
            "set_kv_buffer",
            swa_pool,
            "aiter_backend.py",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    swa = decoder_swa(req)
    if req.is_mla:
        if mode == "decode":
            ocl = req.forward_batch.out_cache_loc
            loc = (
                ocl
                if era in ("legacy", "kwarg")
                else (
                    req.api.KVWriteLoc(ocl, swa)
                    if era == "bundled"
                    else write_loc(req, era, loc=ocl, swa_loc=None, current=FOR_BATCH)[0]
                )
            )
        else:
            loc = bare_loc(req, era, loc=req.cache_loc())
        kv_write(req, loc, {}, req.mla_k, req.v)
        return
    if mode == "decode":
        loc, keywords = write_loc(
            req, era, loc=req.forward_batch.out_cache_loc, swa_loc=swa, current=FOR_BATCH
        )
        scales = descales(req) if decode_passes_descales(req, era) else ()
        kv_write(req, loc, keywords, req.k, req.v, scales)
        return
    loc, keywords = write_loc(req, era, loc=req.cache_loc(), swa_loc=swa)
    kv_write(req, loc, keywords, req.k, req.v, descales(req))
