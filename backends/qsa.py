"""qsa (layers/attention/qwen_sparse_attn_backend.py and qsa/qsa_indexer.py 0.5.23, CUDA):
Qwen4-Exp's compressed sparse attention on a QSATokenToKVPool.

Each full-attention layer's indexer runs before its attention (QSAIndexer
update_key_state_and_compress, the eager path):
- `set_qsa_key_state_buffer(layer_id, state_slots[:n], token_k)`, then
  `set_qsa_rope_position_buffer(state_slots[:n], rope_positions)` (1-D positions), where
  state_slots is build_pending_ring_slots' `req_pool_idx * ratio + position % ratio`;
- `set_qsa_compressed_k_buffer(layer_id, write_locs, normalized)` for the groups the forward
  completes, unless there are none (write_locs.numel() == 0 returns first). The compressed keys
  are the model's (pooled, normalised, rotated): here drawn, one per group end.
Then attention writes K/V with `set_kv_buffer(layer, forward_batch.out_cache_loc, k, v)`: the
bare loc, no scales, in both modes (the fused KV-attention path is CUDA-only).

Where the release's QwenSparseAttnBackend imports (0.5.22, 0.5.23), its forwards write the K/V
as release code (backends/real_code.py); the indexer's stores, which the layer's QSAIndexer
makes, stay this model's and run first (`RealCode.model_first`).

The scenario's tokens are a decode batch's, each its own request (scenarios.materialize
qsa_ring_slot), so no two tokens of a forward share a ring row. The census reads set_kv_buffer
and set_mla_kv_buffer calls: the file's own set_kv_buffer call is the bare-loc shape modelled.
"""

from __future__ import annotations

import torch

from backends.call_shapes import (
    ATTENTION,
    ERA_NAMES,
    KV,
    CallSiteModel,
    Shape,
    branch,
    eras_branches,
)
from backends.context import WriteRequest
from backends.entry import EXTEND_AND_DECODE, ValueScope, register_backend
from backends.plain import PLAIN_FOCUS
from backends.real_code import RealCode
from scenarios.model import QSA_KINDS

# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (
        ("current",),
        (
            branch("forward_extend", "save_kv_cache"),
            branch("_forward_extend_cp", "save_kv_cache"),
            branch("forward_decode", "save_kv_cache"),
        ),
    ),
)


CENSUS = CallSiteModel(
    (ATTENTION + "qwen_sparse_attn_backend.py",),
    {era: (Shape(KV, "bare", "out_cache_loc"),) for era in ERA_NAMES},
    branches=BRANCHES,
)


def store_indexer_keys(req: WriteRequest) -> None:
    """The layer's QSAIndexer, before attention: the pending ring's keys and positions, then the
    compressed keys of the groups the forward completes."""
    pool, layer, plan = req.pool, req.layer, req.metadata
    tokens = req.qsa_state.shape[0]
    state_slots = plan.qsa_ring_slots[:tokens]
    pool.set_qsa_key_state_buffer(layer.layer_id, state_slots, req.qsa_state)
    pool.set_qsa_rope_position_buffer(state_slots, plan.qsa_positions)
    if plan.qsa_write_locs.numel():
        compressed = req.qsa_ck[plan.qsa_group_rows]
        pool.set_qsa_compressed_k_buffer(layer.layer_id, plan.qsa_write_locs, compressed)


@register_backend(
    name="qsa",
    order=98,
    census=CENSUS,
    device_type="cuda",
    pool_kinds=QSA_KINDS,
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    focus={"extend": PLAIN_FOCUS["extend"], "decode": ("decode", "small-decode")},
    value_scope=ValueScope(
        QSA_KINDS,
        "k and v cast to the pool dtype (no scales passed: the door's 1.0); the ring keys cast "
        "to bf16, the compressed keys to the indexer dtype, the ring's positions each token's "
        "slot",
        scaled=False,
    ),
    real_code=RealCode(
        "sglang.srt.layers.attention.qwen_sparse_attn_backend",
        "QwenSparseAttnBackend",
        # The fused K/V-attention path needs q on CUDA (qwen_sparse_attn_backend.py 1393), so
        # on a CPU its eligibility decides nothing.
        fields=lambda req, mode: {"_fused_kv_pool_eligible": False},
        forward_kwargs=lambda req, mode: {
            "topk_indices": req.k.new_zeros((req.k.shape[0], 1), dtype=torch.int32)
        },
        model_first=store_indexer_keys,
    ),
    summary="full-attention layers: the indexer's ring, RoPE-position and compressed-key stores, "
    "then set_kv_buffer(layer, out_cache_loc, k, v) with the bare loc and no scales",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    store_indexer_keys(req)
    req.pool.set_kv_buffer(req.layer, req.forward_batch.out_cache_loc, req.k, req.v)
