"""ascend (hardware_backend/npu/attention/ascend_backend.py, NPU; MHA and MLA).

Never passes scales. MHA writes the encoder loc on cross-attention layers and drops the SWA loc
there (0.5.13+). MLA writes a bare out_cache_loc in every release through
`set_kv_buffer(layer, loc, k_nope, k_rope)`: on NPUMLATokenToKVPool the (cache_k, cache_v) pair
means (nope, rope), stored in two buffers. Extend splits the latent row (`k.split([rank, rope])`,
two views of the caller's k); decode gets nope and rope apart. A pool in the CUDA layout has no
such meaning for set_kv_buffer, so there the same write goes through its (nope, rope) door,
set_mla_kv_buffer. The NPU MHA layout and the CP helper are modelled elsewhere (context_parallel).

Its release class runs on the MHA kinds (backends/real_code.py): the module imports with torch_npu
and sgl_kernel_npu stood in, each name a placeholder that raises if called. A stand-in torch_npu
sets no `torch.npu`, so device discovery (harness/plan/devices.py) still finds no NPU. The MLA
extend reads a per-request list before its write, so the MLA kinds run the model.
"""

from __future__ import annotations

from typing import Any

from backends.call_shapes import (
    HARDWARE,
    KV,
    CallSiteModel,
    bare_site,
    branch,
    eras_branches,
    merge,
    swa_site,
)
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MHA_POOLS, MLA_POOLS, register_backend
from backends.era_calls import BARE, decoder_swa, kv_write, write_loc
from backends.real_code import RealCode
from pools.kinds.layout import NPU_MHA, NPU_MLA
from pools.kinds.spec import names


def npu_mla_layout(pool: Any) -> bool:
    """NPU MLA pools (SGLang's NPUMLATokenToKVPool, or a SUT that says so) take (nope, rope)."""
    return getattr(pool, "npu_nope_rope_set_kv_buffer", False) or type(pool).__name__.startswith(
        "NPU"
    )


_NPU_UNMODELLED = {
    name: "an NPU path backends/ascend.py does not model (only forward_extend and forward_decode)"
    for name in (
        "forward_sparse",
        "forward_dllm",
        "forward_mtp",
        "forward_decode_graph",
        "forward_mixed",
    )
}
_NPU_UNMODELLED["_cp_allgather_and_save_kv_npu"] = (
    "the NPU CP write; backends/context_parallel.py models the CUDA one"
)

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "kwarg", "bundled", "current"),
        (
            branch(
                "forward_extend",
                "self.use_mla",
                "not sum(forward_batch.extend_prefix_lens_cpu) > 0",
                "layer.qk_head_dim != layer.v_head_dim",
                "layer.v_head_dim in [256]",
                "save_kv_cache",
            ),
            branch("forward_decode", "self.use_mla", "save_kv_cache"),
        ),
    ),
    (
        ("legacy", "bundled", "current"),
        (
            branch(
                "forward_extend",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
                "not is_cp_mode",
            ),
            branch(
                "forward_decode",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
            ),
        ),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
                "not is_cp_mode",
                "self.use_sliding_window_kv_pool and (not layer.is_cross_attention)",
            ),
            branch(
                "forward_extend",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
                "not is_cp_mode",
                "not (self.use_sliding_window_kv_pool and (not layer.is_cross_attention))",
            ),
            branch(
                "forward_decode",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
                "self.use_sliding_window_kv_pool and (not layer.is_cross_attention)",
            ),
            branch(
                "forward_decode",
                "not self.use_mla",
                "save_kv_cache and k is not None and (v is not None)",
                "not (self.use_sliding_window_kv_pool and (not layer.is_cross_attention))",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (HARDWARE + "npu/attention/ascend_backend.py",),
    merge(swa_site("cache_loc", current="KVWriteLoc"), bare_site(KV, "out_cache_loc")),
    unmodelled_functions=_NPU_UNMODELLED,
    branches=BRANCHES,
)


@register_backend(
    name="ascend",
    order=100,
    real_code=RealCode(
        "sglang.srt.hardware_backend.npu.attention.ascend_backend",
        "AscendAttnBackend",
        standins={"torch_npu": {}, "sgl_kernel_npu": {}},
        fields=lambda req, mode: {
            "is_dllm_model": False,
            "attn_cp_size": 1,
            "enable_sparsity_driven_kv_offload": False,
            "graph_mode": False,
        },
        model_kinds=MLA_POOLS + names(NPU_MLA),
        why_model="MLA: the extend sums forward_batch.extend_prefix_lens_cpu before its write "
        "(ascend_backend.py 2102 on 0.5.23), a per-request list the driver does not build",
    ),
    census=CENSUS,
    device_type="npu",
    pool_kinds=MHA_POOLS + MLA_POOLS + names(NPU_MHA, NPU_MLA),
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_ONLY,
    summary="no scales; SWA loc dropped on cross-attention; MLA (nope, rope) "
    "through the NPU pool's set_kv_buffer",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    if req.is_mla:
        nope, rope = req.k, req.k_rope
        if mode == "extend" and rope is not None:
            nope, rope = req.mla_k.split([req.k.shape[-1], rope.shape[-1]], dim=-1)
        door = req.pool.set_kv_buffer if npu_mla_layout(req.pool) else req.pool.set_mla_kv_buffer
        door(req.layer, req.forward_batch.out_cache_loc, nope, rope)
        return
    loc, keywords = write_loc(
        req, era, loc=req.cache_loc(), swa_loc=decoder_swa(req, cross="dropped"), current=BARE
    )
    kv_write(req, loc, keywords, req.k, req.v)
