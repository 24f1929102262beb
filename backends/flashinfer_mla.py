"""flashinfer_mla (layers/attention/flashinfer_mla_backend.py, CUDA; MLA only).

Writes out_cache_loc (no cross-attention, no SWA) without scales; 0.5.23 wraps it in
KVWriteLoc.for_batch. (nope, rope) go through set_mla_kv_buffer when k_rope is given, the latent
row through set_kv_buffer otherwise. Extend over a cached prefix (mha_chunk_kv_cache) writes
nothing: not modelled.
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    KV,
    MLA,
    CallSiteModel,
    bare_site,
    branch,
    eras_branches,
    merge,
)
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MLA_POOLS, register_backend
from backends.era_calls import FOR_BATCH, bare_loc
from backends.real_code import NO_ATTENTION, RealCode


def mla_loc(req: WriteRequest, era: str):
    return bare_loc(req, era, loc=req.forward_batch.out_cache_loc, current=FOR_BATCH)


# FlashInferMLA's (and its flashmla subclass's) attention wrappers: fetched from the forward
# metadata before the write, called only after it.
MLA_WRAPPERS_LEFT_OUT = {"prefill_wrapper": NO_ATTENTION, "decode_wrapper": NO_ATTENTION}

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "kwarg", "bundled", "current"),
        (
            branch(
                "forward_extend",
                "save_kv_cache and k is not None",
                "save_kv_cache",
                "k_rope is not None",
            ),
            branch(
                "forward_extend",
                "save_kv_cache and k is not None",
                "save_kv_cache",
                "k_rope is None",
            ),
            branch("forward_decode", "k is not None", "save_kv_cache", "k_rope is not None"),
            branch("forward_decode", "k is not None", "save_kv_cache", "k_rope is None"),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "flashinfer_mla_backend.py",),
    merge(
        bare_site(MLA, "out_cache_loc", current="for_batch"),
        bare_site(KV, "out_cache_loc", current="for_batch"),
    ),
    branches=BRANCHES,
)


REAL_CODE = RealCode(
    "sglang.srt.layers.attention.flashinfer_mla_backend",
    "FlashInferMLAAttnBackend",
    metadata=lambda req, mode: MLA_WRAPPERS_LEFT_OUT,
)


@register_backend(
    name="flashinfer_mla",
    real_code=REAL_CODE,
    order=110,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    summary="set_mla_kv_buffer with k_rope, set_kv_buffer without; out_cache_loc",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    write_latent(req, era)


def write_latent(req: WriteRequest, era: str) -> None:
    """Its call on any rank (flashinfer_mla_dcp makes the same one): (nope, rope) through
    set_mla_kv_buffer when k_rope is given, the latent row through set_kv_buffer otherwise."""
    if not req.save_kv_cache:
        return
    if req.k_rope is not None:
        req.pool.set_mla_kv_buffer(req.layer, mla_loc(req, era), req.k, req.k_rope)
    else:
        req.pool.set_kv_buffer(req.layer, mla_loc(req, era), req.k, req.v)
