"""dsa (layers/attention/dsa_backend.py, CUDA): DeepSeek V3.2's sparse attention, here on a
HiSparse DSA pool (the `hisparse_dsa` kind).

Every write site of 0.5.15 to 0.5.23 (forward_extend, forward_decode and the trtllm_mla path)
calls `set_mla_kv_buffer(layer, cache_loc, k, k_rope)`: the bare loc, encoder_out_cache_loc on
a cross-attention layer, no KVWriteLoc. 0.5.15 to 0.5.21's HiSparse DSA doors index their mapping
with the loc as given, so the bare loc is what they must take; 0.5.22 on unwrap either.

Before attention, the layer's indexer stores its key (dsa_indexer.py `_store_index_k_cache`, the
path without a fused CUDA or AITER store): `set_index_k_scale_buffer(layer_id=, loc=
forward_batch.out_cache_loc, index_k=k_fp8, index_k_scale=k_scale)`, act_quant's fp8 key and
float32 scale, at the logical loc (a HiSparse pool keeps its indexer keys by logical id).

Where the release's DeepseekSparseAttnBackend imports (0.5.22, 0.5.23), its forwards write the
K/V as release code (backends/real_code.py); the indexer's store, which another release object
makes, stays this model's and runs first (`RealCode.model_first`).
"""

from __future__ import annotations

from backends.call_shapes import (
    ATTENTION,
    ERA_NAMES,
    MLA,
    CallSiteModel,
    Shape,
    branch,
    eras_branches,
)
from backends.context import WriteRequest
from backends.dsa_indexer import store_index_keys
from backends.entry import EXTEND_AND_DECODE, ValueScope, register_backend
from backends.focus import LAYOUT_DTYPES
from backends.plain import PLAIN_FOCUS
from backends.real_code import RealCode
from pools.kinds.hybrid import HISPARSE_DSA
from scenarios.model import DSA_MLA_KINDS, SWA_DSA_KINDS

# The DSA kinds beside the HiSparse one test where a store lands (a rank's pages, a rank's layers,
# a hybrid's dense layers); their casts are the HiSparse kind's, which runs every dtype. Only
# these dtypes of theirs are planned.
DSA_PLACEMENT_DTYPES = {kind: LAYOUT_DTYPES for kind in DSA_MLA_KINDS if kind != HISPARSE_DSA.name}
DSA_PLACEMENT_REASON = (
    "they test which tokens, layers and rows a DSA store reaches; every cast of the DSA store is "
    "judged on hisparse_dsa over every dtype (docs/notes/layout-dtypes.md)"
)

# A SWA pool over DSA is written by its model (backends/dots3.py): this site's bare loc carries
# no swa_loc for its sliding-window layers.
DSA_BACKEND_KINDS = tuple(kind for kind in DSA_MLA_KINDS if kind not in SWA_DSA_KINDS)

# The if tests that choose each write call: the same in every release that has the file
# (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.18, 0.5.22
# and 0.5.23). The trtllm path writes whenever the caller asks it to save.
BRANCHES = eras_branches(
    (
        ERA_NAMES,
        (
            branch("forward_extend", "k is not None", "save_kv_cache"),
            branch("forward_decode", "k is not None", "save_kv_cache"),
            branch("_forward_trtllm", "save_kv_cache"),
        ),
    ),
)

CENSUS = CallSiteModel(
    # nsa_backend.py is the file's 0.5.12 name (the same three bare set_mla_kv_buffer calls);
    # 0.5.13 and 0.5.14 keep it as a re-export shim with no write call, 0.5.23 drops it.
    (ATTENTION + "dsa_backend.py", ATTENTION + "nsa_backend.py"),
    {era: (Shape(MLA, "bare", "cache_loc"),) for era in ERA_NAMES},
    branches=BRANCHES,
)


@register_backend(
    name="dsa",
    order=96,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=DSA_BACKEND_KINDS,
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    focus={"extend": PLAIN_FOCUS["extend"], "decode": ("decode", "small-decode")},
    kind_dtypes=DSA_PLACEMENT_DTYPES,
    kind_dtypes_reason=DSA_PLACEMENT_REASON,
    value_scope=ValueScope(DSA_BACKEND_KINDS, "nope ++ rope cast, no scales"),
    real_code=RealCode(
        "sglang.srt.layers.attention.dsa_backend",
        "DeepseekSparseAttnBackend",
        # No top-k plan reaches the write: with topk_indices None the kpool tail checks return
        # at once, and any implementation but trtllm (its own path, _forward_trtllm) writes at
        # forward_extend's and forward_decode's set_mla_kv_buffer.
        fields=lambda req, mode: {
            "dsa_prefill_impl": "flashmla_sparse",
            "dsa_decode_impl": "flashmla_sparse",
            "use_mha": False,
            "dsa_index_kpool": 1,
        },
        model_first=store_index_keys,
    ),
    summary="set_mla_kv_buffer(layer, cache_loc, k, k_rope) with the bare loc, every mode",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    store_index_keys(req)  # the indexer's store, before attention
    req.pool.set_mla_kv_buffer(req.layer, req.cache_loc(), req.k, req.k_rope)
