"""trtllm_mla (layers/attention/trtllm_mla_backend.py, CUDA SM100; a flashinfer_mla subclass).

Writes set_mla_kv_buffer(layer, out_cache_loc, k, k_rope) only (KVWriteLoc.for_batch in 0.5.23).
Its fp8 path quantizes and ropes k before the write, and 0.5.23's fused concat kernels bypass the
pool: both are skips on the entry below (bf16 only here).
"""

from __future__ import annotations

from backends.call_shapes import ATTENTION, MLA, CallSiteModel, bare_site, branch, eras_branches
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MLA_POOLS, register_backend
from backends.flashinfer_mla import mla_loc
from backends.real_code import RealCode
from backends.skips import BackendSkip, fp8_cache
from scenarios.model import Scenario


def _rope_less(scenario: Scenario, mode: str) -> bool:
    return scenario.geometry.qk_rope_head_dim == 0


def trtllm_mla_fields(req: WriteRequest, mode: str) -> dict:
    """What its write reads that its __init__ would set (cutedsl_mla, a subclass, shares it)."""
    return {
        "forward_prefill_metadata": None,
        "data_type": req.pool.dtype,
        # The eager path's init_forward_metadata clears the capture-stable decode locs
        # (0.5.17-0.5.18 `_decode_dense_loc`, 0.5.19-0.5.21 `_decode_kernel_loc`).
        "_decode_dense_loc": None,
        "_decode_kernel_loc": None,
    }


# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "kwarg", "bundled"),
        (
            branch("forward_decode", "save_kv_cache"),
            branch("forward_extend", "save_kv_cache"),
        ),
    ),
    (
        ("current",),
        (
            branch("forward_decode", "query is None and save_kv_cache", "query is None"),
            branch("forward_extend", "save_kv_cache and fused_fp8_query is None"),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "trtllm_mla_backend.py",),
    bare_site(MLA, "out_cache_loc", current="for_batch"),
    branches=BRANCHES,
)


@register_backend(
    name="trtllm_mla",
    real_code=RealCode(
        "sglang.srt.layers.attention.trtllm_mla_backend",
        "TRTLLMMLABackend",
        fields=trtllm_mla_fields,
    ),
    order=130,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_ONLY,
    summary="set_mla_kv_buffer only; out_cache_loc",
    skips=(
        BackendSkip(
            "rope-less-mla",
            "MLA scenarios without a rope part (qk_rope_head_dim 0)",
            "its extend and decode assert both k_nope and k_rope before the write: a rope-less "
            "MLA geometry is not served by it",
            _rope_less,
            "trtllm_mla_backend.py 0.5.14, 0.5.23",
        ),
        BackendSkip(
            "fp8-quantize-rope",
            "fp8 KV caches",
            "the fp8 path quantizes and ropes k "
            "before the write, and 0.5.23's fused concat kernels bypass the pool",
            fp8_cache,
            "trtllm_mla_backend.py",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    req.pool.set_mla_kv_buffer(req.layer, mla_loc(req, era), req.k, req.k_rope)
