"""dsv4_indexer: a DeepSeek V4 compress ratio's indexer keys, written through
DeepSeekV4IndexerPool.set_index_k_scale_buffer (the `dsv4_indexer` kind).

In 0.5.23 the door's one caller is DeepSeekV4TokenToKVPool.set_index_k_scale_buffer(layer_id,
loc, index_k, index_k_scale), which looks the model layer up in its layer_mapping and hands the
ratio's indexer pool the compress layer id (0 up, the pool's own start_layer 0) and the loc as
given: a bare tensor, no KVWriteLoc. Its own caller, on a device that is not an Ascend one, is the
Ascend DSV4 pool's set_compress_buffer (from_indexer, a scale given); CUDA writes the same keys
through the fused store (set_index_k_fused) instead, which quantises as this door's keys are
quantised here: per token, one float32 scale (absmax / 448, the absmax floored at 1e-4 as CUDA's
store.cuh does) and the e4m3 keys (scenarios.materialize.dsv4_index_quant). Extend and decode
make the same call.
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.entry import BF16_AND_FP8, EXTEND_AND_DECODE, ValueScope, register_backend
from backends.plain import PLAIN_FOCUS
from scenarios.model import DSV4_INDEXER_KINDS

DSV4_INDEXER_FOCUS = {"extend": PLAIN_FOCUS["extend"], "decode": ("decode", "small-decode")}
"""The pool-sized set `plain` runs elsewhere: this is the kind's only call site."""

# The pool's dtype argument (the V4 model's KV cache dtype) reaches no buffer: its cache is uint8
# bytes of fp8 keys and float32 scales whatever it is. The layout kinds' two dtypes.
DSV4_INDEXER_DTYPES = BF16_AND_FP8


@register_backend(
    name="dsv4_indexer",
    order=93,
    device_type="cuda",
    pool_kinds=DSV4_INDEXER_KINDS,
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    dtypes=DSV4_INDEXER_DTYPES,
    focus=DSV4_INDEXER_FOCUS,
    value_scope=ValueScope(
        DSV4_INDEXER_KINDS, "the V4 indexer's e4m3 keys and float32 scale bytes, as handed"
    ),
    real_code_gap="the release driver stops a forward at set_kv_buffer and set_mla_kv_buffer "
    "(backends/real_code.py WRITE_DOORS); this door is reached through DeepSeekV4TokenToKVPool, "
    "which needs the runtime's published config to construct",
    summary="DeepSeekV4TokenToKVPool's route: set_index_k_scale_buffer(compress layer id, "
    "out_cache_loc, e4m3 keys, float32 scales), the bare loc, every mode",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    req.pool.set_index_k_scale_buffer(
        req.layer.layer_id, req.forward_batch.out_cache_loc, req.index_k, req.index_k_scale
    )
