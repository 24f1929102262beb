"""Ascend NPU pool layouts (sglang/srt/hardware_backend/npu/memory_pool_npu.py, 0.5.23), in torch.

NPUMHATokenToKVPool: one all-layer tensor per K and V, (layers, pages, page_size, heads, dim);
a layer's view is (pages * page_size) token rows. NPUMLATokenToKVPool: the latent (nope) and the
rope part in separate all-layer buffers, k_buffer (layers, pages, page_size, 1, kv_lora_rank) and
v_buffer (..., qk_rope_head_dim); its set_kv_buffer(layer, loc, cache_k, cache_v) means
(nope, rope), and a None cache_v splits the latent row. The real torch_npu scatter ops run only
where torch_npu is present (harness.plan.engine_matrix says why not otherwise).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import MHAStorage, MLAStorage, _layer_index
from pools.builtin.engines.base import Scale


def _all_layers(storage: Any, *row: int) -> torch.Tensor:
    total = storage.size + storage.page_size
    if total % storage.page_size:
        raise ValueError(
            f"NPU pools need size + page_size divisible by page_size, got "
            f"size={storage.size}, page_size={storage.page_size}"
        )
    return torch.zeros(
        (storage.layer_num, total // storage.page_size, storage.page_size, *row),
        dtype=storage.store_dtype,
        device=storage.device,
    )


def token_rows(layer_buffer: torch.Tensor) -> torch.Tensor:
    """(pages, page_size, heads, dim) -> (slots, heads, dim), a view of the same memory."""
    return layer_buffer.reshape(-1, *layer_buffer.shape[2:])


class NPUMHAStorage(MHAStorage):
    def _create_buffers(self) -> None:
        self.k_buffer = _all_layers(self, self.head_num, self.head_dim)
        self.v_buffer = _all_layers(self, self.head_num, self.v_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.k_buffer[layer_id - self.start_layer])

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.v_buffer[layer_id - self.start_layer])

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        layer_id_override: Optional[int],
    ) -> None:
        index = _layer_index(layer, layer_id_override) - self.start_layer
        self.engine.store_kv(
            token_rows(self.k_buffer[index]),
            token_rows(self.v_buffer[index]),
            loc,
            cache_k,
            cache_v,
            k_scale,
            v_scale,
            self.dtype,
            self.store_dtype,
        )


class NPUMLAStorage(MLAStorage):
    npu_nope_rope_set_kv_buffer = True  # what backends/ascend.py asks

    def _create_buffers(self) -> None:
        self.k_buffer = _all_layers(self, 1, self.kv_lora_rank)
        self.v_buffer = _all_layers(self, 1, self.qk_rope_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.k_buffer[layer_id - self.start_layer]

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.v_buffer[layer_id - self.start_layer]

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: Optional[torch.Tensor],
        layer_id_override: Optional[int] = None,
    ) -> None:
        # (cache_k, cache_v) is (nope, rope); the era's set_mla_kv_buffer parses the loc.
        self.set_mla_kv_buffer(layer, loc_info, cache_k, cache_v, layer_id_override)

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        self._store_nope_rope(layer, loc, cache_k, None, layer_id_override)

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        if k_rope is None:
            k_nope, k_rope = k_nope.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        index = _layer_index(layer, layer_id_override) - self.start_layer
        engine = self.engine
        engine.scatter(
            token_rows(self.k_buffer[index]), loc, engine.cast(k_nope, self.dtype, self.store_dtype)
        )
        engine.scatter(
            token_rows(self.v_buffer[index]), loc, engine.cast(k_rope, self.dtype, self.store_dtype)
        )
