"""The hybrid sliding-window pool's structure: two sub-pools, a layer map and a slot map.

How a write reaches the SWA sub-pool (translate inside, `swa_loc=`, or KVWriteLoc) is the era's
business; this class only routes layers and owns the mapping.
"""

from __future__ import annotations

from typing import Any, Optional

import torch


class SWAStorage:
    default_sub_pool_class: type  # the era's MHATokenToKVPool, bound by pools.builtin.sut

    def __init__(
        self,
        size: int,
        size_swa: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        swa_attention_layer_ids: list[int],
        full_attention_layer_ids: list[int],
        device: str,
        token_to_kv_pool_class: Optional[type] = None,
        full_kv_pool_class: Optional[type] = None,
        swa_kv_pool_class: Optional[type] = None,
        full_kv_pool_kwargs: Optional[dict] = None,
        swa_kv_pool_kwargs: Optional[dict] = None,
        enable_memory_saver: bool = False,
        **kwargs: Any,
    ):
        self.size = size
        self.size_swa = size_swa
        self.page_size = page_size
        self.dtype = dtype
        self.device = device
        self.start_layer = 0
        self.layer_num = len(swa_attention_layer_ids) + len(full_attention_layer_ids)
        sub_pool_class = token_to_kv_pool_class or self.default_sub_pool_class
        common = {
            "page_size": page_size,
            "device": device,
            "enable_memory_saver": enable_memory_saver,
        }
        full_kwargs = full_kv_pool_kwargs or {
            **common,
            "head_num": head_num,
            "head_dim": head_dim,
            **kwargs,
        }
        swa_kwargs = swa_kv_pool_kwargs or {
            **common,
            "head_num": head_num,
            "head_dim": head_dim,
            **kwargs,
        }
        self.full_kv_pool = (full_kv_pool_class or sub_pool_class)(
            size=size, dtype=dtype, layer_num=len(full_attention_layer_ids), **full_kwargs
        )
        self.swa_kv_pool = (swa_kv_pool_class or sub_pool_class)(
            size=size_swa, dtype=dtype, layer_num=len(swa_attention_layer_ids), **swa_kwargs
        )
        self.use_mla = hasattr(self.full_kv_pool, "kv_lora_rank")
        # {global layer id: (id inside its sub-pool, is_swa_layer)}
        self.layers_mapping: dict[int, tuple[int, bool]] = {}
        for local_id, global_id in enumerate(full_attention_layer_ids):
            self.layers_mapping[global_id] = (local_id, False)
        for local_id, global_id in enumerate(swa_attention_layer_ids):
            self.layers_mapping[global_id] = (local_id, True)
        self.full_to_swa_index_mapping: Optional[torch.Tensor] = None

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        self.full_to_swa_index_mapping = full_to_swa_index_mapping

    def translate_loc_from_full_to_swa(self, kv_indices: torch.Tensor) -> torch.Tensor:
        assert self.full_to_swa_index_mapping is not None
        return self.full_to_swa_index_mapping[kv_indices]

    def _sub_pool(self, layer_id: int) -> tuple[Any, int, bool]:
        local_id, is_swa = self.layers_mapping[layer_id]
        return (self.swa_kv_pool if is_swa else self.full_kv_pool), local_id, is_swa

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        pool, local_id, _ = self._sub_pool(layer_id)
        return pool.get_key_buffer(local_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        pool, local_id, _ = self._sub_pool(layer_id)
        return pool.get_value_buffer(local_id)

    def set_index_k_scale_buffer(self, layer_id: int, *args: Any, **kwargs: Any) -> None:
        """A DSA full sub-pool's indexer door; SWA layers have none."""
        local_id, is_swa = self.layers_mapping[layer_id]
        assert not is_swa
        self.full_kv_pool.set_index_k_scale_buffer(local_id, *args, **kwargs)

    def get_index_k_with_scale_buffer(self, layer_id: int) -> torch.Tensor:
        local_id, is_swa = self.layers_mapping[layer_id]
        assert not is_swa
        return self.full_kv_pool.get_index_k_with_scale_buffer(local_id)

    def _write_kv(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
    ) -> None:
        """Write at an already-resolved sub-pool loc; MLA sub-pools take no scales."""
        pool, local_id, _ = self._sub_pool(layer.layer_id)
        if self.use_mla:
            pool.set_kv_buffer(None, loc, cache_k, cache_v, layer_id_override=local_id)
        else:
            pool.set_kv_buffer(
                None, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override=local_id
            )

    def _write_mla(
        self, layer: Any, loc: torch.Tensor, k_nope: torch.Tensor, k_rope: Optional[torch.Tensor]
    ) -> None:
        pool, local_id, _ = self._sub_pool(layer.layer_id)
        if not self.use_mla:
            raise TypeError(f"Layer {layer.layer_id} is not backed by an MLA KV pool")
        pool.set_mla_kv_buffer(None, loc, k_nope, k_rope, layer_id_override=local_id)

    def _is_swa_layer(self, layer: Any) -> bool:
        return self.layers_mapping[layer.layer_id][1]
