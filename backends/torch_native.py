"""torch_native (layers/attention/torch_native_backend.py, any device; MHA, and MLA pools).

Never passes scales (the pool's defaults apply: None on MHA pools, 1.0 on SWA pools). MLA pools
get the full latent row through set_kv_buffer. The loc is the encoder loc on cross-attention
layers (since PRs #8622/#8675), paired from 0.5.13 with the decoder's SWA loc that
init_forward_metadata translated; 0.5.14+ builds a bare KVWriteLoc (not physical in 0.5.23).
On an SGLang SUT that carries TorchNativeAttnBackend, its cells run that real code instead,
its own __init__ and init_forward_metadata included (backends/real_code.py).
"""

from __future__ import annotations

from backends.call_shapes import ATTENTION, CallSiteModel, branch, eras_branches, swa_site
from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, MHA_POOLS, MLA_POOLS, register_backend
from backends.era_calls import BARE, decoder_swa, kv_write, write_loc
from backends.real_code import RealCode

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("legacy",),
        (
            branch("forward_extend", "save_kv_cache"),
            branch("forward_decode", "save_kv_cache"),
        ),
    ),
    (
        ("kwarg",),
        (
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_extend",
                "save_kv_cache and k is not None and (v is not None)",
                "not self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "save_kv_cache and k is not None and (v is not None)",
                "self.use_sliding_window_kv_pool",
            ),
            branch(
                "forward_decode",
                "save_kv_cache and k is not None and (v is not None)",
                "not self.use_sliding_window_kv_pool",
            ),
        ),
    ),
    (
        ("bundled", "current"),
        (
            branch("forward_extend", "save_kv_cache and k is not None and (v is not None)"),
            branch("forward_decode", "save_kv_cache and k is not None and (v is not None)"),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "torch_native_backend.py",),
    swa_site("cache_loc", current="KVWriteLoc"),
    branches=BRANCHES,
)


@register_backend(
    name="torch_native",
    order=80,
    census=CENSUS,
    device_type="cpu",
    pool_kinds=MHA_POOLS + MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    dtypes=BF16_AND_FP8,
    mla_input="latent",
    summary="no scales; encoder loc paired with the decoder's SWA loc",
    real_code=RealCode(
        "sglang.srt.layers.attention.torch_native_backend",
        "TorchNativeAttnBackend",
        construct=True,
        own_metadata=True,
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    loc, keywords = write_loc(req, era, loc=req.cache_loc(), swa_loc=decoder_swa(req), current=BARE)
    kv_write(req, loc, keywords, req.mla_k if req.is_mla else req.k, req.v)
