"""The buffers and byte moves every era shares, in plain torch indexing (SGLang's CPU fallback).

Self-contained on purpose: the mutant catalog must stay valid when the builtin pools change, so
nothing here comes from pools/. Each step is a small method so a mutant overrides exactly one.
"""

from __future__ import annotations

from typing import Any, Optional

import torch


def storage_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp8 caches live in uint8 buffers and are viewed back as fp8 on read."""
    return torch.uint8 if dtype.is_floating_point and dtype.itemsize == 1 else dtype


class TokenPool:
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        layer_num: int,
        device: str,
        start_layer: Optional[int] = None,
    ) -> None:
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self.store_dtype = storage_dtype(dtype)
        self.layer_num, self.start_layer = layer_num, start_layer or 0

    def _buffers(self, *row: int) -> list[torch.Tensor]:
        return [
            torch.zeros(
                (self.size + self.page_size, *row), dtype=self.store_dtype, device=self.device
            )
            for _ in range(self.layer_num)
        ]

    def _read(self, buffers: list[torch.Tensor], layer_id: int) -> torch.Tensor:
        """Layer `layer_id`'s buffer, fp8 viewed back from its uint8 storage."""
        buffer = buffers[layer_id - self.start_layer]
        return buffer.view(self.dtype) if self.store_dtype != self.dtype else buffer

    def _index(self, layer: Any, layer_id_override: Optional[int]) -> int:
        layer_id = layer_id_override if layer_id_override is not None else layer.layer_id
        return layer_id - self.start_layer

    def _cast(self, values: torch.Tensor) -> torch.Tensor:
        values = values.to(self.dtype) if values.dtype != self.dtype else values
        return values.view(self.store_dtype) if self.store_dtype != self.dtype else values

    def _put(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        if rows.shape[0] != loc.shape[0]:
            raise IndexError(f"{loc.shape[0]} slots for {rows.shape[0]} rows")
        buffer[loc] = rows


class MHAPool(TokenPool):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        v_head_dim: Optional[int] = None,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        **_ignored: Any,
    ) -> None:
        super().__init__(size, page_size, dtype, layer_num, device, start_layer)
        self.head_num, self.head_dim = head_num, head_dim
        self.v_head_dim = v_head_dim or head_dim
        self.k_buffer = self._buffers(head_num, head_dim)
        self.v_buffer = self._buffers(head_num, self.v_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._read(self.k_buffer, layer_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self._read(self.v_buffer, layer_id)

    def _divide(
        self, cache_k: torch.Tensor, cache_v: torch.Tensor, k_scale: Any, v_scale: Any
    ) -> None:
        """In place, in the input dtype, and only when a cast follows: the caller sees it."""
        if cache_k.dtype != self.dtype:
            if k_scale is not None:
                cache_k.div_(k_scale)
            if v_scale is not None:
                cache_v.div_(v_scale)

    def _store(
        self,
        layer: Any,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any,
        v_scale: Any,
        layer_id_override: Optional[int],
    ) -> None:
        index = self._index(layer, layer_id_override)
        self._divide(cache_k, cache_v, k_scale, v_scale)
        self._put(self.k_buffer[index], loc, self._cast(cache_k))
        self._put(self.v_buffer[index], loc, self._cast(cache_v))


class MLAPool(TokenPool):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        kv_lora_rank: int,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
        **_ignored: Any,
    ) -> None:
        super().__init__(size, page_size, dtype, layer_num, device, start_layer)
        self.kv_lora_rank, self.qk_rope_head_dim = kv_lora_rank, qk_rope_head_dim
        self.kv_buffer = self._buffers(1, kv_lora_rank + qk_rope_head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._read(self.kv_buffer, layer_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.get_key_buffer(layer_id)[..., : self.kv_lora_rank]

    def _store_rows(
        self, layer: Any, loc: torch.Tensor, cache_k: torch.Tensor, layer_id_override: Optional[int]
    ) -> None:
        """No scales: the MLA pool casts and stores the latent row; cache_v is ignored."""
        self._put(self.kv_buffer[self._index(layer, layer_id_override)], loc, self._cast(cache_k))

    def _store_nope_rope(
        self,
        layer: Any,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        layer_id_override: Optional[int],
    ) -> None:
        row = k_nope if k_rope is None or k_rope.shape[-1] == 0 else torch.cat([k_nope, k_rope], -1)
        self._store_rows(layer, loc, row, layer_id_override)


class HybridPool:
    """SWAKVPool's structure and doors: a full and a SWA sub-pool, a layer map and the slot
    mapping. Which sub-pool slots a write lands on is the era's `_resolve(layer, loc_info)`; the
    kwarg era, whose doors also take `swa_loc=`, brings its own doors."""

    sub_pool_class: type  # the era's MHATokenToKVPool

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
    ) -> None:
        self.size, self.size_swa, self.page_size, self.dtype = size, size_swa, page_size, dtype
        self.device, self.start_layer = device, 0
        self.layer_num = len(swa_attention_layer_ids) + len(full_attention_layer_ids)
        cls = token_to_kv_pool_class or self.sub_pool_class
        mha = dict(
            page_size=page_size, device=device, head_num=head_num, head_dim=head_dim, **kwargs
        )
        self.full_kv_pool = cls(
            size=size,
            dtype=dtype,
            layer_num=len(full_attention_layer_ids),
            **(full_kv_pool_kwargs or mha),
        )
        self.swa_kv_pool = cls(
            size=size_swa,
            dtype=dtype,
            layer_num=len(swa_attention_layer_ids),
            **(swa_kv_pool_kwargs or mha),
        )
        self.use_mla = hasattr(self.full_kv_pool, "kv_lora_rank")
        self.layers_mapping = self._layers_mapping(
            swa_attention_layer_ids, full_attention_layer_ids
        )
        self.full_to_swa_index_mapping: Optional[torch.Tensor] = None

    @staticmethod
    def _layers_mapping(swa_ids: list[int], full_ids: list[int]) -> dict[int, tuple[int, bool]]:
        """{global layer id: (id inside its sub-pool, is_swa)}"""
        mapping = {global_id: (local_id, False) for local_id, global_id in enumerate(full_ids)}
        mapping.update({global_id: (local_id, True) for local_id, global_id in enumerate(swa_ids)})
        return mapping

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        self.full_to_swa_index_mapping = full_to_swa_index_mapping

    def translate_loc_from_full_to_swa(self, kv_indices: torch.Tensor) -> torch.Tensor:
        return self.full_to_swa_index_mapping[kv_indices]

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
        """Sub-pools get layer=None and their local layer id; MLA sub-pools take no scales."""
        pool, local_id = self._sub_pool(layer.layer_id)
        scales = () if self.use_mla else (k_scale, v_scale)
        pool.set_kv_buffer(None, loc, cache_k, cache_v, *scales, layer_id_override=local_id)

    def _write_mla(
        self, layer: Any, loc: torch.Tensor, k_nope: torch.Tensor, k_rope: Optional[torch.Tensor]
    ) -> None:
        if not self.use_mla:
            raise TypeError(f"Layer {layer.layer_id} is not backed by an MLA KV pool")
        pool, local_id = self._sub_pool(layer.layer_id)
        pool.set_mla_kv_buffer(None, loc, k_nope, k_rope, layer_id_override=local_id)

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        self._write_kv(layer, self._resolve(layer, loc_info), cache_k, cache_v, k_scale, v_scale)

    def set_mla_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k_nope: torch.Tensor,
        cache_k_rope: Optional[torch.Tensor],
    ) -> None:
        self._write_mla(layer, self._resolve(layer, loc_info), cache_k_nope, cache_k_rope)
