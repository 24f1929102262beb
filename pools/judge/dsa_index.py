"""The judge's DSA indexer key cache, as SGLang 0.5.23's DSATokenToKVPool keeps it
(mem_cache/index_key_cache.py IndexKeyCache, kernels/ops/kvcache/dsa_index_k_cache.py SetKAndS):
per layer, (pages, 64 * (128 + 4)) bytes, each page its 64 tokens' 128-byte fp8 keys and then
their 4-byte float32 scales.

set_index_k_scale_buffer(layer_id, loc, index_k, index_k_scale) takes (n, 128) fp8 e4m3 keys
and (n,) or (n, 1) float32 scales, one per loc, contiguous; anything else raises (the store's
asserts: AssertionError; a scale of another rank: ValueError). Token i's key goes to page
loc // 64 at byte (loc % 64) * 128, its scale at 64 * 128 + (loc % 64) * 4, in token order.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from pools.judge.casts import bits_of

PAGE, KEY_BYTES, SCALE_BYTES = 64, 128, 4


class JudgeDSAIndexKeys:
    def _create_index_keys(self, index_buf_size: int, layer_num: int) -> None:
        pages = (index_buf_size + PAGE + 1) // PAGE
        self.index_k_with_scale_buffer = [
            torch.zeros((pages, PAGE * (KEY_BYTES + SCALE_BYTES)), dtype=torch.uint8)
            for _ in range(layer_num)
        ]

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        return self.index_k_with_scale_buffer[layer_id - self.start_layer]

    def _index_keys_written_by(self, layer_id: int) -> torch.Tensor:
        """The cache the door writes for `layer_id`: the one its reader gives here."""
        return self.get_index_k_with_scale_buffer(layer_id)

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if index_k_scale.ndim not in (1, 2):
            raise ValueError(f"index_k_scale must be 1D or 2D, got shape {index_k_scale.shape}")
        tokens = loc.shape[0]
        scale_dim = 1 if index_k_scale.ndim == 1 else index_k_scale.shape[1]
        if (
            loc.ndim != 1
            or tuple(index_k.shape) != (tokens, KEY_BYTES)
            or index_k_scale.shape[0] != tokens
            or scale_dim != 1
            or index_k.dtype != torch.float8_e4m3fn
            or index_k_scale.dtype != torch.float32
            or not (index_k.is_contiguous() and index_k_scale.is_contiguous())
        ):
            raise AssertionError("the DSA index K store takes (n, 128) fp8 keys, (n, 1) fp32")
        buffer = self._index_keys_written_by(layer_id).numpy()
        keys = bits_of(index_k).reshape(tokens, KEY_BYTES)
        scales = bits_of(index_k_scale).reshape(tokens).view(np.uint8).reshape(tokens, SCALE_BYTES)
        for token, slot in enumerate(loc.tolist()):
            page, offset = divmod(slot, PAGE)
            buffer[page, offset * KEY_BYTES : (offset + 1) * KEY_BYTES] = keys[token]
            scale_at = PAGE * KEY_BYTES + offset * SCALE_BYTES
            buffer[page, scale_at : scale_at + SCALE_BYTES] = scales[token]


class JudgeDSAPool(JudgeDSAIndexKeys):
    """DSATokenToKVPool's constructor, before the era's MLATokenToKVPool in the MRO: 64-token
    pages (asserted), and an indexer key cache of `index_buf_size` ids (the pool's size unless
    given)."""

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
        if page_size != PAGE:
            raise AssertionError(f"DSA requires 64-token physical pages, got {page_size}")
        super().__init__(
            size=size, page_size=page_size, dtype=dtype, kv_lora_rank=kv_lora_rank,
            qk_rope_head_dim=qk_rope_head_dim, layer_num=layer_num, device=device,
            start_layer=start_layer, end_layer=end_layer,
        )  # fmt: skip
        self._create_index_keys(size if index_buf_size is None else index_buf_size, layer_num)
