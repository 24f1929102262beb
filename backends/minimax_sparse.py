"""minimax_sparse (layers/attention/minimax_sparse_backend.py 0.5.23, CUDA/ROCm/NPU): the sparse
layers of a MiniMax model on a MiniMaxSparseKVPool.

forward_extend and forward_decode make one call per sparse layer, the same in both modes:
`set_fused_kv_index_buffer(layer, forward_batch.out_cache_loc, k, v, idx_k, idx_v or None,
layer.k_scale_float, layer.v_scale_float, layer.idx_k_scale_float, layer.idx_v_scale_float)`,
a bare loc (no KVWriteLoc), idx_v None on a value-disabled layer. A dense layer of the model is
written by its dense attention backend: here the canonical current-era call (the `plain` one).
Its calls go through set_fused_kv_index_buffer, not set_kv_buffer, so the source census (which
reads set_kv_buffer and set_mla_kv_buffer calls) holds no shapes of it.
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.entry import EXTEND_AND_DECODE, ValueScope, register_backend
from backends.plain import PLAIN_FOCUS, write_set_kv_buffer
from scenarios.model import SPARSE_INDEX_KINDS

SPARSE_FOCUS = {"extend": PLAIN_FOCUS["extend"], "decode": ("decode", "small-decode")}
"""The pool-sized set `plain` runs elsewhere: this is the only call site of the kind."""


@register_backend(
    name="minimax_sparse",
    order=95,
    device_type="cuda",
    pool_kinds=SPARSE_INDEX_KINDS,
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    focus=SPARSE_FOCUS,
    value_scope=ValueScope(
        SPARSE_INDEX_KINDS,
        "main k and v divided by the layer's scales (when a cast follows), cast to the pool "
        "dtype; the index k and v likewise by the index scales",
    ),
    real_code_gap="the release driver stops a forward at set_kv_buffer and set_mla_kv_buffer "
    "(backends/real_code.py WRITE_DOORS); this backend writes through set_fused_kv_index_buffer",
    summary="sparse layers: set_fused_kv_index_buffer with the bare out_cache_loc and float "
    "scales (main K/V, index K, index V unless value-disabled); dense layers: the plain call",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    if req.idx_k is None:  # a dense layer: its dense attention backend's canonical call
        return write_set_kv_buffer(req, era, mode)
    layer = req.layer
    req.pool.set_fused_kv_index_buffer(
        layer,
        req.forward_batch.out_cache_loc,
        req.k,
        req.v,
        req.idx_k,
        req.idx_v,
        layer.k_scale_float,
        layer.v_scale_float,
        layer.idx_k_scale_float,
        layer.idx_v_scale_float,
    )
