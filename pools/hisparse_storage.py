"""The builtin HiSparse device pools (SGLang 0.5.23 mem_cache/hisparse_memory_pool.py): an MHA
pool (HiSparseMHAMainPool, MiniMax-M3's) or a DSA MLA pool (HiSparseDSATokenToKVPool) whose
doors write a logical token id at its device slot, full_to_hisparse_device_index_mapping[loc],
as a bare loc through the era's MHA or MLA door (the DSA doors take no scales). The DSA pool
requires 64-token pages, and keeps its indexer keys by logical id (DSAIndexKeyStorage): per
layer, pages of 64 tokens' fp8 keys (128 bytes each) and then their float32 scales.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.write_loc import unwrap_current


class HiSparseMapping:
    full_to_hisparse_device_index_mapping: Optional[torch.Tensor] = None
    unregistered: type = AssertionError  # the MHA pool asserts; the DSA pool has no attribute

    def register_mapping(self, full_to_hisparse_device_index_mapping: torch.Tensor) -> None:
        self.full_to_hisparse_device_index_mapping = full_to_hisparse_device_index_mapping

    def translate_loc_to_hisparse_device(self, loc_info: Any) -> torch.Tensor:
        loc, _, _ = unwrap_current(loc_info)
        if self.full_to_hisparse_device_index_mapping is None:
            raise self.unregistered("full_to_hisparse_device_index_mapping is not registered")
        return self.full_to_hisparse_device_index_mapping[loc]


class HiSparseMHAStorage(HiSparseMapping):
    """Before the era's MHATokenToKVPool in the MRO (pools/builtin_sut.py)."""

    def set_kv_buffer(
        self, layer: Any, loc: Any, cache_k: torch.Tensor, cache_v: torch.Tensor, *args, **kwargs
    ) -> None:
        device_loc = self.translate_loc_to_hisparse_device(loc)
        super().set_kv_buffer(layer, device_loc, cache_k, cache_v, *args, **kwargs)


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

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if index_k_scale.ndim not in (1, 2):
            raise ValueError(f"index_k_scale must be 1D or 2D, got shape {index_k_scale.shape}")
        assert index_k.dtype == torch.float8_e4m3fn and index_k_scale.dtype == torch.float32
        assert index_k.is_contiguous() and index_k_scale.is_contiguous()
        (tokens,) = loc.shape
        assert index_k.shape == (tokens, 128) and index_k_scale.reshape(tokens, -1).shape[1] == 1
        buffer = self.get_index_k_with_scale_buffer(layer_id)
        loc = loc.to(torch.int64)
        page, offset = loc // 64, loc % 64
        keys = buffer[:, : 64 * 128].unflatten(1, (64, 128))
        scales = buffer[:, 64 * 128 :].unflatten(1, (64, 4))
        keys[page, offset] = index_k.view(torch.uint8)
        scales[page, offset] = index_k_scale.reshape(tokens, 1).view(torch.uint8)


class HiSparseDSAStorage(HiSparseMapping, DSAIndexKeyStorage):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor."""

    unregistered = AttributeError

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
        host_to_device_ratio: int = 2,
        **_ignored: Any,
    ):
        assert page_size == 64, f"DSA requires 64-token physical pages, got {page_size}"
        super().__init__(
            size=size, page_size=page_size, dtype=dtype, kv_lora_rank=kv_lora_rank,
            qk_rope_head_dim=qk_rope_head_dim, layer_num=layer_num, device=device,
            start_layer=start_layer, end_layer=end_layer,
        )  # fmt: skip
        self._create_index_keys(size * host_to_device_ratio, layer_num)

    def set_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k: torch.Tensor, cache_v: torch.Tensor
    ) -> None:
        device_loc = self.translate_loc_to_hisparse_device(loc_info)
        super().set_kv_buffer(layer, device_loc, cache_k, cache_v)

    def set_mla_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k_nope: torch.Tensor, cache_k_rope: Any
    ) -> None:
        device_loc = self.translate_loc_to_hisparse_device(loc_info)
        super().set_mla_kv_buffer(layer, device_loc, cache_k_nope, cache_k_rope)
