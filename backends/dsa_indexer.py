"""The DSA indexer's key store (layers/attention/dsa/dsa_indexer.py `_store_index_k_cache`, the path
without a fused CUDA or AITER store): in a DSA model it runs before attention whatever backend
writes the layer's K/V, so every call site that writes a DSA pool stores the keys first.
"""

from __future__ import annotations

from backends.context import WriteRequest


def store_index_keys(req: WriteRequest) -> None:
    """act_quant's fp8 key and float32 scale at the logical out_cache_loc (a HiSparse pool keeps
    its indexer keys by logical id), where the layer draws them."""
    if req.index_k is None:
        return
    req.pool.set_index_k_scale_buffer(
        layer_id=req.layer.layer_id,
        loc=req.forward_batch.out_cache_loc,
        index_k=req.index_k,
        index_k_scale=req.index_k_scale,
    )
