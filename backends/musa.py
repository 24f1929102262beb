"""musa (hardware_backend/musa/attention/flashattention_backend.py): fa3's subclass on MUSA.

As fa3, except that 0.5.14+ builds a bare KVWriteLoc(cache_loc, swa) (never physical in 0.5.23)
and the MLA site passes a bare cache_loc in every release. Its CP write is ungated by
save_kv_cache in all releases and raises in 0.5.23 (see backends.context_parallel).
"""

from __future__ import annotations

from backends.call_shapes import (
    HARDWARE,
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
from backends.fa3 import KWARG_DECODE_BRANCHES, fa3_style_write
from backends.real_code import GPU_FUNCTION, RealCode

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy", "bundled", "current"),
        (
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode)",
                "not self.use_mla",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode)",
                "self.use_mla",
            ),
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
                "save_kv_cache and (not is_cp_mode)",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode)",
                "not self.use_sliding_window_kv_pool",
                "not self.use_mla",
            ),
            branch(
                "forward_extend",
                "k is not None",
                "save_kv_cache and (not is_cp_mode)",
                "not self.use_sliding_window_kv_pool",
                "self.use_mla",
            ),
            *KWARG_DECODE_BRANCHES,
        ),
    ),
)


CENSUS = CallSiteModel(
    (HARDWARE + "musa/attention/flashattention_backend.py",),
    merge(swa_site("cache_loc", LAYER_SCALES, current="KVWriteLoc"), bare_site(MLA, "cache_loc")),
    branches=BRANCHES,
)


@register_backend(
    name="musa",
    real_code=RealCode(
        "sglang.srt.hardware_backend.musa.attention.flashattention_backend",
        "MusaFlashAttentionBackend",
        standins={
            "flash_attn_interface": {
                "flash_attn_varlen_func": GPU_FUNCTION,
                "flash_attn_with_kvcache": GPU_FUNCTION,
                "get_scheduler_metadata": GPU_FUNCTION,
            }
        },
    ),
    order=70,
    census=CENSUS,
    device_type="musa",
    pool_kinds=MHA_POOLS + MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    summary="fa3's calls, bare KVWriteLoc, bare MLA loc in every release",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    fa3_style_write(req, era, current=BARE, mla_loc_wrapped=False)
