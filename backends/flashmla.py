"""flashmla (layers/attention/flashmla_backend.py, CUDA; a flashinfer_mla subclass).

Its forward takes no k_rope, so k is the latent row, written through set_kv_buffer without
scales at out_cache_loc (KVWriteLoc.for_batch in 0.5.23). With an fp8 cache it quantizes only q.
"""

from __future__ import annotations

from backends.call_shapes import ATTENTION, KV, CallSiteModel, bare_site, branch, eras_branches
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MLA_POOLS, register_backend
from backends.flashinfer_mla import MLA_WRAPPERS_LEFT_OUT, mla_loc
from backends.real_code import GPU_CLASS, GPU_FUNCTION, RealCode

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy",),
        (
            branch(
                "forward_extend",
                "not (forward_batch.forward_mode == ForwardMode.EXTEND or "
                "forward_batch.forward_mode == ForwardMode.DRAFT_EXTEND)",
                "k is not None",
                "save_kv_cache",
            ),
        ),
    ),
    (
        ("legacy", "kwarg", "bundled", "current"),
        (branch("forward_decode", "k is not None", "save_kv_cache"),),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "forward_batch.forward_mode not in "
                "(ForwardMode.EXTEND, ForwardMode.DRAFT_EXTEND, ForwardMode.DRAFT_EXTEND_V2)",
                "k is not None",
                "save_kv_cache",
            ),
        ),
    ),
    (
        ("bundled",),
        (
            branch(
                "forward_extend",
                "forward_batch.forward_mode not in "
                "(ForwardMode.EXTEND, ForwardMode.DRAFT_EXTEND_V2)",
                "k is not None",
                "save_kv_cache",
            ),
        ),
    ),
    (
        ("current",),
        (
            branch(
                "forward_extend",
                "forward_batch.forward_mode != ForwardMode.EXTEND",
                "k is not None",
                "save_kv_cache",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "flashmla_backend.py",),
    bare_site(KV, "out_cache_loc", current="for_batch"),
    branches=BRANCHES,
)


@register_backend(
    name="flashmla",
    real_code=RealCode(
        "sglang.srt.layers.attention.flashmla_backend",
        "FlashMLABackend",
        metadata=lambda req, mode: MLA_WRAPPERS_LEFT_OUT,
        standins={
            "flash_mla": {"fused_norm_rope_attn_rope_cast": GPU_FUNCTION},
            "flash_mla.flash_mla_interface": {"FlashMLASchedMeta": GPU_CLASS},
            # 0.5.14 takes the kernels from sgl_kernel instead.
            "sgl_kernel.flash_mla": {
                "flash_mla_with_kvcache": GPU_FUNCTION,
                "get_mla_metadata": GPU_FUNCTION,
            },
        },
    ),
    order=120,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    mla_input="latent",
    summary="latent row through set_kv_buffer; out_cache_loc",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    req.pool.set_kv_buffer(req.layer, mla_loc(req, era), req.mla_k, req.v)
