"""The builtin QSA pool (SGLang 0.5.23 mem_cache/qsa_kv_pool.py QSATokenToKVPool): a hybrid
linear MHA pool (pools/builtin/hybrid_linear_storage.py) with the QSA indexer's caches on its
full-attention layers: a bf16 pending key ring per layer, the ring's int64 RoPE positions
shared by all layers, and per-layer compressed keys in the indexer dtype, the per-layer views of
one flat allocation. Each door stores `buffer[loc.long()] = values.to(buffer.dtype)`.
"""

from __future__ import annotations

from typing import Any

import torch

from pools.builtin.hybrid_linear_storage import HybridLinearStorage
from pools.kinds.hybrid import QSA
from pools.kinds.pool_classes import builtin_pool


class QSAStorage(HybridLinearStorage):
    index_state_dtype = torch.bfloat16

    def __init__(
        self,
        *,
        size: int,
        dtype: torch.dtype,
        page_size: int,
        head_num: int,
        head_dim: int,
        full_attention_layer_ids: list[int],
        device: str,
        mamba_pool: Any,
        qsa_index_kv_heads: int,
        qsa_index_head_dim: int,
        qsa_compress_ratio: int,
        qsa_token_topk: int,
        num_request_slots: int,
        enable_memory_saver: bool = False,
        qsa_indexer_dtype: torch.dtype = torch.bfloat16,
    ):
        if page_size <= 1 or page_size % qsa_compress_ratio != 0:
            raise ValueError(f"compressed QSA requires page_size % ratio == 0: {page_size}")
        super().__init__(
            size, dtype, page_size, head_num, head_dim, full_attention_layer_ids, device,
            mamba_pool, enable_memory_saver,
        )  # fmt: skip
        if min(qsa_index_kv_heads, qsa_index_head_dim, qsa_compress_ratio, qsa_token_topk) <= 0:
            raise ValueError("QSA cache configuration values must be positive")
        if qsa_token_topk % qsa_compress_ratio != 0:
            raise ValueError("qsa_token_topk must be divisible by qsa_compress_ratio")
        if qsa_indexer_dtype not in (torch.bfloat16, torch.float8_e4m3fn):
            raise ValueError(f"unsupported QSA indexer dtype {qsa_indexer_dtype}")
        if num_request_slots <= 0:
            raise ValueError(f"QSA pending ring needs request slots, got {num_request_slots}")
        layers = len(self.full_attention_layer_id_mapping)
        ring_slots = num_request_slots * qsa_compress_ratio
        capacity = -((size + page_size) // -qsa_compress_ratio)
        self.qsa_key_state_buffer_pool = [
            torch.zeros(
                (ring_slots, qsa_index_kv_heads, qsa_index_head_dim),
                dtype=self.index_state_dtype,
                device=device,
            )
            for _ in range(layers)
        ]
        self.qsa_rope_position_buffer = torch.zeros(
            (ring_slots, 3), dtype=torch.int64, device=device
        )
        flat = torch.zeros(
            (layers, capacity * qsa_index_kv_heads * qsa_index_head_dim),
            dtype=qsa_indexer_dtype,
            device=device,
        )
        self.qsa_compressed_k_buffer_pool = [
            flat[layer].view(capacity, qsa_index_kv_heads, qsa_index_head_dim)
            for layer in range(layers)
        ]

    def get_qsa_key_state_buffer(self, layer_id: int) -> torch.Tensor:
        return self.qsa_key_state_buffer_pool[self._dense(layer_id)]

    def get_qsa_compressed_k_buffer(self, layer_id: int) -> torch.Tensor:
        return self.qsa_compressed_k_buffer_pool[self._dense(layer_id)]

    def set_qsa_key_state_buffer(
        self, layer_id: int, loc: torch.Tensor, token_k: torch.Tensor
    ) -> None:
        buffer = self.get_qsa_key_state_buffer(layer_id)
        buffer[loc.long()] = token_k.to(buffer.dtype)

    def set_qsa_rope_position_buffer(self, loc: torch.Tensor, positions: torch.Tensor) -> None:
        positions = positions.long()
        if positions.ndim == 1:
            positions = positions.unsqueeze(0).expand(3, -1)
        if positions.ndim != 2 or positions.shape[0] != 3:
            raise ValueError(
                f"QSA RoPE positions must be [tokens] or [3, tokens]: {positions.shape}"
            )
        self.qsa_rope_position_buffer[loc.long()] = positions.transpose(0, 1)

    def set_qsa_compressed_k_buffer(
        self, layer_id: int, loc: torch.Tensor, compressed_k: torch.Tensor
    ) -> None:
        buffer = self.get_qsa_compressed_k_buffer(layer_id)
        buffer[loc.long()] = compressed_k.to(buffer.dtype)


@builtin_pool(QSA)
def qsa_pool(module: Any) -> type:
    return type(
        "QSATokenToKVPool",
        (QSAStorage,),
        {"mha_pool_class": module.MHATokenToKVPool, "mla_pool_class": module.MLATokenToKVPool},
    )
