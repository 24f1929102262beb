"""The judge's DeepSeekV4IndexerPool (SGLang 0.5.23 mem_cache/deepseek_v4_memory_pool.py): one
DeepSeek V4 compress ratio's indexer keys and nothing else (its K/V doors and readers raise
NotImplementedError).

Per layer, one uint8 cache of `pages` rows of page_size * bytes-per-token bytes, where pages is
ceil((size + global_page_size) / page_size) (_num_dsv4_physical_kv_pages: the paged allocator
reserves one page at the model's logical page size, global_page_size, page_size unless given) and
a token is 128 + 4 bytes (fp8 key, float32 scale) or, with use_fp4_indexer, 64 + 4.

set_index_k_scale_buffer(layer_id, loc, index_k, index_k_scale) writes the cache of
`layer_id - start_layer` through the DSA indexer's SetKAndS store (pools/judge/dsa_index.py): its
page size is the pool's (index_page_size), which must be 64 tokens of 132 bytes, so an FP4 cache
or another page size is refused (AssertionError) before any byte moves. Its reader,
get_index_k_with_scale_buffer, takes the local index as given (no start_layer).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.dsa_index import KEY_BYTES, PAGE, SCALE_BYTES, JudgeDSAIndexKeys
from pools.kinds.composite import DSV4_INDEXER
from pools.kinds.pool_classes import judge_pool


class JudgeDeepSeekV4IndexerPool(JudgeDSAIndexKeys):
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
        if use_fp4_indexer is None:  # SGLang reads the runtime's published config here
            raise ValueError("config namespace 'exec' not published")
        self.size, self.page_size, self.dtype, self.layer_num = size, page_size, dtype, layer_num
        self.device, self.index_head_dim = device, index_head_dim
        self.start_layer = start_layer or 0
        self.end_layer = end_layer or layer_num - 1
        self.use_fp4_indexer = use_fp4_indexer
        self.global_page_size = global_page_size or page_size
        token_bytes = (
            index_head_dim // 2 + index_head_dim // 32
            if use_fp4_indexer
            else index_head_dim + index_head_dim // 128 * 4
        )
        pages = -(-(size + self.global_page_size) // page_size)
        self.index_k_with_scale_buffer = [
            torch.zeros((pages, page_size * token_bytes), dtype=torch.uint8)
            for _ in range(layer_num)
        ]

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        return self.index_k_with_scale_buffer[layer_id]

    def _index_keys_written_by(self, layer_id: int) -> torch.Tensor:
        cache = self.index_k_with_scale_buffer[layer_id - self.start_layer]
        if self.page_size != PAGE or cache.shape[1] != PAGE * (KEY_BYTES + SCALE_BYTES):
            raise AssertionError("the DSA index K store takes 64-token pages of 132 bytes a token")
        return cache

    def set_kv_buffer(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError()

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        raise NotImplementedError()

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        raise NotImplementedError()

    def get_kv_buffer(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError()


judge_pool(DSV4_INDEXER)(lambda module: JudgeDeepSeekV4IndexerPool)
