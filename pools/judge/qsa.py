"""The judge's QSA pool, as SGLang 0.5.23's QSATokenToKVPool (mem_cache/qsa_kv_pool.py): a
hybrid linear MHA pool (pools/judge/hybrid_linear.py) whose full-attention layers also keep the
QSA indexer's caches, each reached by the layer's index among the full-attention layers.

- The pending key ring: per layer (num_request_slots * ratio, heads, head_dim) in bf16, whatever
  the indexer dtype. set_qsa_key_state_buffer(layer_id, loc, token_k) writes
  `ring[loc.long()] = token_k` cast to bf16.
- The ring's RoPE positions: one (num_request_slots * ratio, 3) int64 buffer for all layers.
  set_qsa_rope_position_buffer(loc, positions) takes positions of shape (tokens,), repeated on
  the three rows, or (3, tokens); any other shape raises ValueError. Row r of the buffer takes
  column r of the positions.
- The compressed keys: per layer (ceil((size + page_size) / ratio), heads, head_dim) in the
  indexer dtype (bf16 or fp8 e4m3fn). set_qsa_compressed_k_buffer(layer_id, loc, compressed_k)
  writes them cast.
- Construction refuses a page size that is 1 or not a multiple of the ratio, a non-positive
  setting, a top-k that is not a multiple of the ratio, another indexer dtype, and no request
  slots (ValueError).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pools.judge.casts import bits_of, bits_view, cast_bits
from pools.judge.hybrid_linear import JudgeHybridLinearPool
from pools.judge.token_writes import write_rows
from pools.kinds.hybrid import QSA
from pools.kinds.pool_classes import judge_pool

RING_DTYPE = torch.bfloat16
INDEXER_DTYPES = (torch.bfloat16, torch.float8_e4m3fn)


class JudgeQSAPool(JudgeHybridLinearPool):
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
        if page_size <= 1 or page_size % qsa_compress_ratio:
            raise ValueError("compressed QSA requires pages a multiple of the compress ratio")
        super().__init__(
            size=size, dtype=dtype, page_size=page_size, head_num=head_num, head_dim=head_dim,
            full_attention_layer_ids=full_attention_layer_ids, device=device,
            mamba_pool=mamba_pool, enable_memory_saver=enable_memory_saver,
        )  # fmt: skip
        settings = (qsa_index_kv_heads, qsa_index_head_dim, qsa_compress_ratio, qsa_token_topk)
        if min(settings) <= 0:
            raise ValueError("QSA cache configuration values must be positive")
        if qsa_token_topk % qsa_compress_ratio:
            raise ValueError("qsa_token_topk must be divisible by qsa_compress_ratio")
        if qsa_indexer_dtype not in INDEXER_DTYPES:
            raise ValueError(f"QSA compressed indexer cache dtype {qsa_indexer_dtype}")
        if num_request_slots <= 0:
            raise ValueError("QSA pending ring needs request slots")
        ring = num_request_slots * qsa_compress_ratio
        capacity = -(-(size + page_size) // qsa_compress_ratio)
        head = (qsa_index_kv_heads, qsa_index_head_dim)
        layers = len(full_attention_layer_ids)
        self.qsa_compressed_dtype = qsa_indexer_dtype
        self.qsa_key_state_buffer_pool = [
            torch.zeros((ring, *head), dtype=RING_DTYPE) for _ in range(layers)
        ]
        self.qsa_rope_position_buffer = torch.zeros((ring, 3), dtype=torch.int64)
        self.qsa_compressed_k_buffer_pool = [
            torch.zeros((capacity, *head), dtype=qsa_indexer_dtype) for _ in range(layers)
        ]

    def get_qsa_key_state_buffer(self, layer_id: int) -> torch.Tensor:
        return self.qsa_key_state_buffer_pool[self._transfer_full_attention_id(layer_id)]

    def get_qsa_compressed_k_buffer(self, layer_id: int) -> torch.Tensor:
        return self.qsa_compressed_k_buffer_pool[self._transfer_full_attention_id(layer_id)]

    def set_qsa_key_state_buffer(
        self, layer_id: int, loc: torch.Tensor, token_k: torch.Tensor
    ) -> None:
        _write_cast(self.get_qsa_key_state_buffer(layer_id), loc, token_k)

    def set_qsa_compressed_k_buffer(
        self, layer_id: int, loc: torch.Tensor, compressed_k: torch.Tensor
    ) -> None:
        _write_cast(self.get_qsa_compressed_k_buffer(layer_id), loc, compressed_k)

    def set_qsa_rope_position_buffer(self, loc: torch.Tensor, positions: torch.Tensor) -> None:
        values = positions.detach().cpu().numpy().astype(np.int64)
        if values.ndim == 1:
            values = np.broadcast_to(values, (3, values.shape[0]))
        if values.ndim != 2 or values.shape[0] != 3:
            raise ValueError(
                f"QSA RoPE positions must be [tokens] or [3, tokens], got {values.shape}"
            )
        write_rows(self.qsa_rope_position_buffer.numpy(), loc.long(), values.T)


def _write_cast(buffer: torch.Tensor, loc: torch.Tensor, values: torch.Tensor) -> None:
    """buffer[loc] = values in the buffer's dtype, through the judge's own casts."""
    rows = cast_bits(bits_of(values.cpu()), values.dtype, buffer.dtype)
    write_rows(bits_view(buffer), loc.long(), rows.reshape(tuple(values.shape)))


@judge_pool(QSA)
def qsa_judge(module) -> type:
    return type(
        "QSATokenToKVPool",
        (JudgeQSAPool,),
        {"mha_pool_class": module.MHATokenToKVPool, "mla_pool_class": module.MLATokenToKVPool},
    )
