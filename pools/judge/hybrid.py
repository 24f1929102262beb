"""The judge's SWAKVPool structure: a full and a SWA sub-pool, the layer map, the slot mapping.

Which sub-pool loc a write uses is the era's business (pools/judge/eras.py `_resolve`); this class
routes layers and translates slots with its own lookup: `mapping[loc]` token by token, negative
ids counting from the end (so -1 reads the trailing -1) and an id out of range raising IndexError.
"""

from __future__ import annotations

from typing import Any, Optional

import torch


def translate(mapping: torch.Tensor, loc: torch.Tensor) -> torch.Tensor:
    """mapping[loc] for a 1-D mapping, one slot at a time."""
    table = mapping.tolist()
    size = len(table)
    translated = []
    for slot in loc.reshape(-1).tolist():
        if not -size <= slot < size:
            raise IndexError(f"index {slot} is out of bounds for dimension 0 with size {size}")
        translated.append(table[slot])
    return torch.tensor(translated, dtype=mapping.dtype, device=mapping.device).reshape(loc.shape)


class JudgeHybridPool:
    default_sub_pool_class: type  # the era's MHATokenToKVPool, bound by judge_module

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
        pool_class = token_to_kv_pool_class or self.default_sub_pool_class
        shared = {
            "page_size": page_size,
            "device": device,
            "enable_memory_saver": enable_memory_saver,
            "head_num": head_num,
            "head_dim": head_dim,
            **kwargs,
        }
        self.full_kv_pool = pool_class(
            size=size,
            dtype=dtype,
            layer_num=len(full_attention_layer_ids),
            **(full_kv_pool_kwargs or shared),
        )
        self.swa_kv_pool = pool_class(
            size=size_swa,
            dtype=dtype,
            layer_num=len(swa_attention_layer_ids),
            **(swa_kv_pool_kwargs or dict(shared)),
        )
        self.use_mla = hasattr(self.full_kv_pool, "kv_lora_rank")
        self.layers_mapping: dict[int, tuple[int, bool]] = {}  # global id -> (local id, is SWA)
        for local_id, global_id in enumerate(full_attention_layer_ids):
            self.layers_mapping[global_id] = (local_id, False)
        for local_id, global_id in enumerate(swa_attention_layer_ids):
            self.layers_mapping[global_id] = (local_id, True)
        self.full_to_swa_index_mapping: Optional[torch.Tensor] = None

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        self.full_to_swa_index_mapping = full_to_swa_index_mapping

    def translate_loc_from_full_to_swa(self, kv_indices: torch.Tensor) -> torch.Tensor:
        assert self.full_to_swa_index_mapping is not None
        return translate(self.full_to_swa_index_mapping, kv_indices)

    def _sub_pool(self, layer_id: int) -> tuple[Any, int]:
        local_id, is_swa = self.layers_mapping[layer_id]
        return (self.swa_kv_pool if is_swa else self.full_kv_pool), local_id

    def _is_swa_layer(self, layer: Any) -> bool:
        return self.layers_mapping[layer.layer_id][1]

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        pool, local_id = self._sub_pool(layer_id)
        return pool.get_key_buffer(local_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        pool, local_id = self._sub_pool(layer_id)
        return pool.get_value_buffer(local_id)

    def _write_kv(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
    ) -> None:
        """Sub-pools get layer=None and their local id; MLA sub-pools take no scales."""
        pool, local_id = self._sub_pool(layer.layer_id)
        if self.use_mla:
            pool.set_kv_buffer(None, loc, cache_k, cache_v, layer_id_override=local_id)
        else:
            pool.set_kv_buffer(
                None, loc, cache_k, cache_v, k_scale, v_scale, layer_id_override=local_id
            )

    def _write_mla(
        self, layer: Any, loc: torch.Tensor, k_nope: torch.Tensor, k_rope: Optional[torch.Tensor]
    ) -> None:
        pool, local_id = self._sub_pool(layer.layer_id)
        if not self.use_mla:
            raise TypeError(f"Layer {layer.layer_id} is not backed by an MLA KV pool")
        pool.set_mla_kv_buffer(None, loc, k_nope, k_rope, layer_id_override=local_id)
