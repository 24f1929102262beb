"""xpu (layers/attention/xpu_backend.py, Intel XPU): musa's call shape, plus one decode quirk.

Until 0.5.14 MLA decode derived `k_rope_val = k_rope if k_rope is not None else
k[:, :, layer.v_head_dim:]`; 0.5.23 passes k_rope as it is (the 0.5.23 MLA pool accepts None).
The DCP branch of 0.5.23 (dcp_size > 1, swa dropped) is not modelled: dcp_size is 1 here.
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
from backends.era_calls import BARE
from backends.fa3 import fa3_style_write
from backends.real_code import GPU_FUNCTION, RealCode

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy",),
        (
            branch("forward_extend", "k is not None", "save_kv_cache", "not self.use_mla"),
            branch("forward_extend", "k is not None", "save_kv_cache", "self.use_mla"),
            branch("forward_decode", "k is not None", "save_kv_cache", "not self.use_mla"),
            branch("forward_decode", "k is not None", "save_kv_cache", "self.use_mla"),
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
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "not self.use_mla",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "self.use_mla",
            ),
            branch(
                "forward_decode",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "not self.use_mla",
            ),
            branch(
                "forward_decode",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_sliding_window_kv_pool",
                "self.use_mla",
            ),
        ),
    ),
    (
        ("bundled", "current"),
        (
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_mla",
            ),
            branch(
                "forward_extend",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "self.use_mla",
            ),
            branch(
                "forward_decode",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "not self.use_mla",
            ),
            branch(
                "forward_decode",
                "not (k is None and v is None)",
                "not (k is None or v is None)",
                "save_kv_cache",
                "self.use_mla",
            ),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "xpu_backend.py",),
    merge(swa_site("cache_loc", LAYER_SCALES, current="KVWriteLoc"), bare_site(MLA, "cache_loc")),
    branches=BRANCHES,
)


@register_backend(
    name="xpu",
    real_code=RealCode(
        "sglang.srt.layers.attention.xpu_backend",
        "XPUAttentionBackend",
        # Both releases' names: 0.5.14 imports flash_mla_get_workspace_size, 0.5.23 the rest.
        standins={
            "sgl_kernel": {
                name: GPU_FUNCTION
                for name in (
                    "flash_mla_decode",
                    "flash_mla_get_workspace_size",
                    "flash_mla_decode_get_workspace_size",
                    "flash_mla_prefill",
                    "flash_mla_prefill_get_workspace_size",
                )
            },
            "sgl_kernel.flash_attn": {
                "flash_attn_varlen_func": GPU_FUNCTION,
                "flash_attn_with_kvcache": GPU_FUNCTION,
            },
        },
        fields=lambda req, mode: {"dcp_size": 1},
    ),
    order=60,
    census=CENSUS,
    device_type="xpu",
    pool_kinds=MHA_POOLS + MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    summary="fa3's calls, bare KVWriteLoc; MLA decode derives k_rope from k until 0.5.14",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    k_rope = None
    if req.is_mla and mode == "decode" and era != "current" and req.k_rope is None:
        k_rope = req.k[:, :, req.layer.v_head_dim :]
    fa3_style_write(req, era, current=BARE, mla_loc_wrapped=False, k_rope=k_rope)
