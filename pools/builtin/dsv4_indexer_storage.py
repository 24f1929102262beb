"""The builtin DeepSeekV4IndexerPool (SGLang 0.5.23 mem_cache/deepseek_v4_memory_pool.py): a
DeepSeek V4 compress ratio's indexer keys only, in the DSA index-key layout (IndexKeyCache's pages
of fp8 keys then float32 scales, written by the SetKAndS store of pools/builtin/dsa_storage.py); as
many pages as the ratio's KV pool, ceil((size + global_page_size) / page_size). No K/V: those doors
raise.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dsa_storage import DSAIndexKeyStorage
from pools.kinds.composite import DSV4_INDEXER
from pools.kinds.pool_classes import builtin_pool


def indexer_bytes_per_token(index_head_dim: int, use_fp4_indexer: bool) -> int:
    """An fp8 key and a float32 scale per 128 values, or e2m1 halves and a byte per 32."""
    if use_fp4_indexer:
        return index_head_dim // 2 + index_head_dim // 32
    return index_head_dim + index_head_dim // 128 * 4


class DeepSeekV4IndexerStorage(DSAIndexKeyStorage):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        index_head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        use_fp4_indexer: Optional[bool] = None,
        global_page_size: Optional[int] = None,
        **_ignored: Any,
    ):
        if use_fp4_indexer is None:
            raise ValueError("use_fp4_indexer must be given: no runtime config to read it from")
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self.layer_num, self.index_head_dim = layer_num, index_head_dim
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1
        self.use_fp4_indexer = use_fp4_indexer
        self.index_page_size = page_size
        self.global_page_size = global_page_size or page_size
        pages = (size + self.global_page_size + page_size - 1) // page_size
        page_bytes = page_size * indexer_bytes_per_token(index_head_dim, use_fp4_indexer)
        self.index_k_with_scale_buffer = [
            torch.zeros((pages, page_bytes), dtype=torch.uint8, device=device)
            for _ in range(layer_num)
        ]

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        return self.index_k_with_scale_buffer[layer_id]  # a local index, as SGLang's reader

    def _index_cache_for_write(self, layer_id: int) -> torch.Tensor:
        buffer = self.index_k_with_scale_buffer[layer_id - self.start_layer]
        assert self.index_page_size == 64, "the SetKAndS store takes 64-token pages"
        assert buffer.shape[1] == 64 * (128 + 4), "the SetKAndS store takes 132-byte tokens"
        return buffer

    def set_kv_buffer(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError()

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        raise NotImplementedError()

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        raise NotImplementedError()

    def get_kv_buffer(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError()


@builtin_pool(DSV4_INDEXER)
def dsv4_indexer_pool(module: Any) -> type:
    return DeepSeekV4IndexerStorage
