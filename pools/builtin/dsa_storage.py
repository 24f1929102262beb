"""The builtin DSATokenToKVPool parts (SGLang 0.5.23 mem_cache/memory_pool.py): an MLA pool with
64-token pages and an indexer key cache (IndexKeyCache, the SetKAndS store): per layer, pages of
64 tokens' fp8 keys (128 bytes each) and then their float32 scales.
"""

from __future__ import annotations

from typing import Any, Optional

import torch


class DSAIndexKeyStorage:
    """DSATokenToKVPool's IndexKeyCache and SetKAndS store, in torch."""

    def _create_index_keys(self, index_buf_size: int, layer_num: int) -> None:
        pages = (index_buf_size + 64 + 1) // 64
        self.index_k_with_scale_buffer = [
            torch.zeros((pages, 64 * (128 + 4)), dtype=torch.uint8, device=self.device)
            for _ in range(layer_num)
        ]

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        return self.index_k_with_scale_buffer[layer_id - self.start_layer]

    def _index_cache_for_write(self, layer_id: int) -> torch.Tensor:
        return self.get_index_k_with_scale_buffer(layer_id)

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if index_k_scale.ndim not in (1, 2):
            raise ValueError(f"index_k_scale must be 1D or 2D, got shape {index_k_scale.shape}")
        assert index_k.dtype == torch.float8_e4m3fn and index_k_scale.dtype == torch.float32
        assert index_k.is_contiguous() and index_k_scale.is_contiguous()
        (tokens,) = loc.shape
        assert index_k.shape == (tokens, 128) and index_k_scale.reshape(tokens, -1).shape[1] == 1
        buffer = self._index_cache_for_write(layer_id)
        loc = loc.to(torch.int64)
        page, offset = loc // 64, loc % 64
        keys = buffer[:, : 64 * 128].unflatten(1, (64, 128))
        scales = buffer[:, 64 * 128 :].unflatten(1, (64, 4))
        keys[page, offset] = index_k.view(torch.uint8)
        scales[page, offset] = index_k_scale.reshape(tokens, 1).view(torch.uint8)


class DSAStorage(DSAIndexKeyStorage):
    """DSATokenToKVPool's constructor, before the era's MLATokenToKVPool in the MRO: 64-token pages
    and indexer keys for `index_buf_size` ids (the pool's size unless given)."""

    def __init__(
        self,
        size: int,
        page_size: int,
        kv_lora_rank: int,
        dtype: torch.dtype,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str,
        index_head_dim: int,
        enable_memory_saver: bool,
        kv_cache_dim: int,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        index_buf_size: Optional[int] = None,
        **_ignored: Any,
    ):
        assert page_size == 64, f"DSA requires 64-token physical pages, got {page_size}"
        super().__init__(
            size=size, page_size=page_size, dtype=dtype, kv_lora_rank=kv_lora_rank,
            qk_rope_head_dim=qk_rope_head_dim, layer_num=layer_num, device=device,
            start_layer=start_layer, end_layer=end_layer,
        )  # fmt: skip
        self._create_index_keys(size if index_buf_size is None else index_buf_size, layer_num)
