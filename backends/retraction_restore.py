"""retraction_restore (managers/schedule_batch.py load_kv_cache and the pools' load_cpu_copy,
0.5.23): the scheduler's restore of a retracted request's KV cache into a MiniMaxM3Nvfp4KVPool,
the one CPU-reachable caller of the pool's byte-copy doors.

When a request is retracted, get_cpu_copy keeps its slots' quantised rows on the host (per
layer, per chunk of cpu_offloading_chunk_size = 8192 slots: the main pool's K payload, V
payload, K scales, V scales from get_quantized_rows, the scales viewed as float8_e4m3fn; the
index pool's payload and scales). On re-admission load_kv_cache hands them back with the
request's slots (`req_to_token[req, :seqlen - 1]`); the composite's load_cpu_copy has the main
pool, then the index pool, store each layer's chunks:
- `main_pool.set_quantized_kv_buffer(layer_id, indices[i:i + chunk], k, v, k_scale, v_scale)`;
- `index_k_pool.set_quantized_k_buffer(index_layer, indices[i:i + chunk], packed, scales)`,
  index_layer being the layer's index among the sparse layers (index_k_layer_id_mapping).
One (forward, layer) here is one layer of that restore: the forward's loc as the request's
slots, the rows derived from the layer's k, v and index k (scenarios.nvfp4_rows) since the
NVFP4 quantiser that would have made them needs SM90+. No scales reach these doors.

The pools' move_slots is the doors' other caller in the file; nothing in 0.5.23 calls it.
"""

from __future__ import annotations

from backends.context import WriteRequest
from backends.entry import BF16_ONLY, ValueScope, register_backend
from backends.plain import PLAIN_FOCUS
from scenarios.model import NVFP4_PAGE_ROW_KINDS
from scenarios.nvfp4_rows import quantised_rows

HOST_CHUNK = 8192  # KVCache.cpu_offloading_chunk_size: the slots of one host chunk


@register_backend(
    name="retraction_restore",
    order=94,
    device_type="cuda",
    pool_kinds=NVFP4_PAGE_ROW_KINDS,
    modes=("extend",),
    eras=("current",),
    # A byte copy does not read the source dtype: bf16, M3.1's activations, stands for all.
    dtypes=BF16_ONLY,
    focus={"extend": PLAIN_FOCUS["extend"]},
    value_scope=ValueScope(
        NVFP4_PAGE_ROW_KINDS,
        "the quantised rows handed (scenarios.nvfp4_rows) stored as they come: no scale, no cast",
        scaled=False,
    ),
    real_code_gap="the release driver runs attention backends' forwards; this call site is the "
    "scheduler's restore of a retracted request (load_kv_cache -> load_cpu_copy)",
    summary="a retracted request's restore: per layer and host chunk, the main pool's "
    "set_quantized_kv_buffer, then the index pool's set_quantized_k_buffer, bare slots",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    pool, layer_id = req.pool, req.layer.layer_id
    slots = req.forward_batch.out_cache_loc
    k, k_scale = quantised_rows(req.k)
    v, v_scale = quantised_rows(req.v)
    packed, scales = quantised_rows(req.idx_k)
    # The host copy keeps the index rows 2-D: get_quantized_rows' (n, 64) and (n, 8).
    packed, scales = packed.reshape(-1, packed.shape[-1]), scales.reshape(-1, scales.shape[-1])
    for start in range(0, slots.numel(), HOST_CHUNK):
        chunk = slice(start, start + HOST_CHUNK)
        pool.main_pool.set_quantized_kv_buffer(
            layer_id, slots[chunk], k[chunk], v[chunk], k_scale[chunk], v_scale[chunk]
        )
    index_layer = pool.index_k_layer_id_mapping[layer_id]
    for start in range(0, slots.numel(), HOST_CHUNK):
        chunk = slice(start, start + HOST_CHUNK)
        pool.index_k_pool.set_quantized_k_buffer(
            index_layer, slots[chunk], packed[chunk], scales[chunk]
        )
