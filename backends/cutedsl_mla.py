"""cutedsl_mla (layers/attention/cutedsl_mla_backend.py 0.5.23, CUDA SM100: flashinfer's cute-dsl
MLA decode; a trtllm_mla subclass).

CuteDslMLABackend inherits trtllm_mla's forward_extend, and its forward_decode hands a forward
without decode context parallelism (DCP) to trtllm_mla's: `set_mla_kv_buffer(layer,
KVWriteLoc.for_batch(forward_batch), k, k_rope)`, the call this module makes. Its own DCP decode
writes the same call (the file's forward_decode call site, checked by the census). The prefill
class's `prepare_prefill_qkv` writes FP8 latent rows its fused rope-quantise kernel produced,
called by the model's prefill, not by a forward: not modelled. trtllm_mla's skips apply.
"""

from __future__ import annotations

from backends import trtllm_mla
from backends.call_shapes import ATTENTION, MLA, CallSiteModel, bare_site, branch, eras_branches
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MLA_POOLS, entries_of, register_backend
from backends.real_code import RealCode

FILE = "cutedsl_mla_backend.py"

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (("current",), (branch("forward_decode", "query is None and save_kv_cache"),)),
)


CENSUS = CallSiteModel(
    (ATTENTION + FILE,),
    {"current": bare_site(MLA, "out_cache_loc", current="for_batch")["current"]},
    unmodelled_functions={
        "prepare_prefill_qkv": "the model's prefill hands it FP8 rows its fused rope-quantise "
        "kernel (a GPU kernel) made; no attention forward calls it"
    },
    branches=BRANCHES,
)


@register_backend(
    name="cutedsl_mla",
    order=132,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MLA_POOLS,
    modes=EXTEND_AND_DECODE,
    eras=("current",),  # the file came with 0.5.22
    dtypes=BF16_ONLY,
    real_code=RealCode(
        "sglang.srt.layers.attention.cutedsl_mla_backend",
        "CuteDslMLABackend",
        fields=trtllm_mla.trtllm_mla_fields,
    ),
    summary="trtllm_mla's write (inherited): set_mla_kv_buffer, KVWriteLoc.for_batch",
    skips=entries_of(trtllm_mla)[0].skips,
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    trtllm_mla.write(req, era, mode)
