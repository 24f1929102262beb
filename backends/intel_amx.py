"""intel_amx (layers/attention/intel_amx_backend.py, CPU AMX; MHA here, MLA only in 0.5.23).

Extend: 0.5.12 writes out_cache_loc even on cross-attention layers and passes no scales; 0.5.13+
writes the encoder loc there and drops the SWA loc for it; 0.5.23 passes `layer.k_scale_float`
and `v_scale_float` when the key buffer is fp8. Decode: the attention kernel
(`decode_attention_cpu(..., k, v, cache_loc)`) stores K/V into the layer's buffers itself,
ignoring save_kv_cache; until 0.5.14 it stored a SWA layer at the untranslated loc. 0.5.23 routes
an fp8 cache through set_kv_buffer (honouring save_kv_cache) and gives the kernel the SWA loc.
"""

from __future__ import annotations

from typing import Any

import torch

from backends.call_shapes import (
    ATTENTION,
    KV,
    SWA,
    CallSiteModel,
    Shape,
    branch,
    eras_branches,
    merge,
    swa_site,
)
from backends.context import WriteRequest
from backends.divergences import (
    CHANGED,
    SCALED_BYTES,
    KnownDivergence,
    every_forward,
    every_layer,
    fp8_scaled,
)
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MHA_POOLS, register_backend
from backends.era_calls import BARE, decoder_swa, kv_cache_is_fp8, kv_write, write_loc
from backends.real_code import RealCode, swa_translation
from backends.skips import (
    BackendSkip,
    cross_attention,
    decode_on,
    fp8_cache,
    never,
    swa_pool,
    unsaved_layer,
)
from pools.kinds.layout import MHA_CPU_FP8
from pools.kinds.spec import names


def _kernel_store(req: WriteRequest, loc: torch.Tensor) -> None:
    """What the decode kernel does to the cache: a plain row store, no scale, no pool call."""
    layer_id = req.layer.layer_id
    for buffer, values in (
        (req.pool.get_key_buffer(layer_id), req.k),
        (req.pool.get_value_buffer(layer_id), req.v),
    ):
        buffer[loc.long()] = values.to(buffer.dtype)


def _scaled_fp8(req: WriteRequest) -> dict[str, Any]:
    if not kv_cache_is_fp8(req):
        return {}
    return {"k_scale": req.layer.k_scale_float, "v_scale": req.layer.v_scale_float}


def _pool_write(req: WriteRequest, era: str) -> None:
    loc, keywords = write_loc(
        req, era, loc=req.cache_loc(), swa_loc=decoder_swa(req, cross="dropped"), current=BARE
    )
    extra = _scaled_fp8(req) if era == "current" else {}
    req.pool.set_kv_buffer(req.layer, loc, req.k, req.v, **keywords, **extra)


FP8_SCALE_FLOAT = KnownDivergence(
    "intel-amx-fp8-scale-float",
    ("current",),
    CHANGED,
    fp8_scaled("extend"),
    every_forward,
    every_layer,
    frozenset({"bytes", "caller_tensors"}),
    SCALED_BYTES,
    "intel_amx's extend passed no scales until 0.5.14; 0.5.23 passes layer.k_scale_float "
    "and v_scale_float when the key buffer is fp8, so the pool divides k and v (in place) "
    "where it used to only cast",
    evidence="diff of the 0.5.14 and 0.5.23 wheels, python/sglang/srt/layers/attention/"
    "intel_amx_backend.py forward_extend: set_kv_buffer gains k_scale=layer."
    "k_scale_float, v_scale=layer.v_scale_float on fp8 caches; no PR names the change",
)

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (("legacy",), (branch("forward_extend", "save_kv_cache"),)),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "self.use_sliding_window_kv_pool and (not layer.is_cross_attention)",
            ),
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "not (self.use_sliding_window_kv_pool and (not layer.is_cross_attention))",
            ),
        ),
    ),
    (
        ("bundled",),
        (branch("forward_extend", "save_kv_cache and k is not None and (v is not None)"),),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "not self.use_mla and key_buffer.dtype == torch.float8_e4m3fn",
            ),
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "not (not self.use_mla and key_buffer.dtype == torch.float8_e4m3fn)",
            ),
            branch(
                "forward_decode",
                "save_kv_cache and k is not None and (v is not None) and "
                "(key_buffer.dtype == torch.float8_e4m3fn)",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "intel_amx_backend.py",),
    merge(
        {
            era: shapes
            for era, shapes in swa_site("cache_loc", current="KVWriteLoc").items()
            if era != "legacy"
        },
        {
            "legacy": (Shape(KV, "bare", "out_cache_loc"),),
            "current": (
                Shape(
                    KV,
                    "KVWriteLoc",
                    "cache_loc",
                    SWA,
                    scales=("layer.k_scale_float", "layer.v_scale_float"),
                ),
            ),
        },
    ),
    branches=BRANCHES,
)


@register_backend(
    name="intel_amx",
    real_code=RealCode(
        "sglang.srt.layers.attention.intel_amx_backend",
        "IntelAMXAttnBackend",
        swa_metadata_method="_init_swa_forward_metadata",
        modes=("extend",),
        why_model="decode: the release's CPU attention kernel (sgl_kernel decode_attention_cpu) "
        "stores K/V itself, and that kernel is not installed here",
        # Releases without the method (0.5.14) translate inline in init_forward_metadata, with
        # the same pool call as swa_translation.
        fields=lambda req, mode: {
            "draft_decode_metadata": None,
            "swa_out_cache_loc": swa_translation(req),
        },
    ),
    order=90,
    device_type="cpu",
    # mha_cpu_fp8: the pool a CPU server with an fp8_e4m3 cache builds, which intel_amx serves.
    pool_kinds=MHA_POOLS + names(MHA_CPU_FP8),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    kind_dtypes={MHA_CPU_FP8.name: ("fp8_e4m3",)},
    kind_dtypes_reason="a CPU server quantizes its cache (CPUFP8KVCacheMethod) only in fp8_e4m3",
    divergences=(FP8_SCALE_FLOAT,),
    census=CENSUS,
    summary="extend: no scales until 0.5.23 (k_scale_float on fp8); decode: the attention kernel "
    "stores K/V itself",
    skips=(
        BackendSkip(
            "legacy-cross-at-out-cache-loc",
            "scenarios with cross-attention layers",
            "0.5.12 wrote cross-attention K/V at out_cache_loc (0.5.13 moved it to the "
            "encoder loc), so the legacy baseline is wrong by design there",
            cross_attention,
            "intel_amx_backend.py 0.5.12",
        ),
        BackendSkip(
            "decode-kernel-unsaved",
            "decode on a layer told not to save",
            "the decode kernel stores K/V as part of its attention whatever save_kv_cache "
            "says (bf16; an fp8 cache's write goes through set_kv_buffer, which honours it), so "
            "its model writes the layer, which the expected writes, from the scenario alone, "
            "leave unwritten; and the decode is the model here: no release code to judge",
            decode_on(unsaved_layer),
            "intel_amx_backend.py 0.5.12-0.5.23",
        ),
        BackendSkip(
            "decode-kernel-swa",
            "decode on SWA pools",
            "until 0.5.14 the decode "
            "kernel stored SWA layers at the untranslated loc, so the legacy baseline "
            "is wrong by design there",
            decode_on(swa_pool),
            "intel_amx_backend.py 0.5.12-0.5.14",
        ),
        BackendSkip(
            "decode-kernel-fp8",
            "decode on fp8 caches",
            "the CPU decode kernel has no fp8 store before 0.5.23 routed fp8 to set_kv_buffer",
            decode_on(fp8_cache),
            "intel_amx_backend.py 0.5.23",
        ),
        BackendSkip(
            "mla-current-only",
            "MLA pools",
            "the MLA write exists only in 0.5.23: no older call site to compare",
            never,
            "intel_amx_backend.py 0.5.23",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if mode == "decode":
        if era == "current" and kv_cache_is_fp8(req):
            if req.save_kv_cache:
                _pool_write(req, era)
            return  # k = v = None afterwards: the kernel stores nothing
        if era == "legacy":
            loc = req.forward_batch.out_cache_loc
        elif (
            era == "current"
            and req.layer.sliding_window_size > 0
            and not req.layer.is_cross_attention
        ):
            loc = req.metadata.swa_out_cache_loc[: req.forward_batch.out_cache_loc.shape[0]]
        else:
            loc = req.cache_loc()
        _kernel_store(req, loc)
        return
    if not req.save_kv_cache:
        return
    if era == "legacy":
        kv_write(req, req.forward_batch.out_cache_loc, {}, req.k, req.v)
    else:
        _pool_write(req, era)
