"""The builtin MiniMaxSparseKVPool (SGLang 0.5.23 memory_pool.py, without HiSparse): a MiniMax
model's KV cache. Every layer keeps K/V in one main MHA pool; a sparse layer also keeps an index
K of one head, beside an index V in an MHA index pool, or alone in a K-only pool for the layers
whose index branch reads no V (disable_value_sparse_layer_ids).

- set_kv_buffer: the main pool's door, any layer, the loc as the call site passed it.
- set_index_kv_buffer: the MHA index pool's door at the layer's index among the index K/V layers
  (its scales divide the caller's tensors in place, as every MHA door's do).
- set_index_k_buffer: a K-only layer; a scale divides a new tensor (`idx_k / k_scale`) when a
  cast follows, then the K-only store casts and writes the bare loc.
- set_fused_kv_index_buffer: the separate stores in turn (SGLang's path off CUDA, or with scales).
- a layer outside a door's group raises ValueError.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dense_storage import TokenPoolStorage
from pools.kinds.hybrid import MINIMAX_SPARSE
from pools.kinds.pool_classes import builtin_pool


class KOnlyStorage(TokenPoolStorage):
    """MHATokenToKOnlyPool: one K buffer per layer, no V."""

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        **_ignored: Any,
    ) -> None:
        super().__init__(size, page_size, dtype, layer_num, device)
        self.head_num, self.head_dim = head_num, head_dim
        self.k_buffer = self._rows(head_num, head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        buffer = self.k_buffer[layer_id - self.start_layer]
        return buffer.view(self.dtype) if self.store_dtype != self.dtype else buffer

    def set_k_buffer(self, layer_id: int, loc: torch.Tensor, cache_k: torch.Tensor) -> None:
        self.engine.store_rows(self.k_buffer[layer_id], loc, cache_k, self.dtype, self.store_dtype)


class MiniMaxSparseStorage:
    # the era's MHATokenToKVPool and the K-only pool, bound by pools/builtin/sut.py
    mha_pool_class: type
    k_only_pool_class: type

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        idx_head_dim: int,
        dense_layer_ids: list[int],
        sparse_layer_ids: list[int],
        device: str,
        disable_value_sparse_layer_ids: Optional[list[int]] = None,
        enable_memory_saver: bool = False,
        start_layer: int = 0,
        end_layer: Optional[int] = None,
        **_ignored: Any,
    ) -> None:
        end = len(dense_layer_ids) + len(sparse_layer_ids) if end_layer is None else end_layer
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self.start_layer = start_layer
        sparse = [layer for layer in sparse_layer_ids if start_layer <= layer < end]
        dense = [layer for layer in dense_layer_ids if start_layer <= layer < end]
        value_disabled = set(disable_value_sparse_layer_ids or ())
        with_v = [layer for layer in sparse if layer not in value_disabled]
        k_only = [layer for layer in sparse if layer in value_disabled]
        self.index_kv_layers = {layer: index for index, layer in enumerate(with_v)}
        self.index_k_layers = {layer: index for index, layer in enumerate(k_only)}
        sizes = dict(size=size, page_size=page_size, device=device)
        self.main_pool = self.mha_pool_class(
            dtype=dtype, head_num=head_num, head_dim=head_dim, layer_num=len(dense) + len(sparse),
            start_layer=start_layer, end_layer=end, **sizes,
        )  # fmt: skip
        index = dict(dtype=dtype, head_num=1, head_dim=idx_head_dim, **sizes)
        self.index_kv_pool = self.mha_pool_class(layer_num=len(with_v), **index) if with_v else None
        self.index_k_pool = (
            self.k_only_pool_class(layer_num=len(k_only), **index) if k_only else None
        )

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.main_pool.get_key_buffer(layer_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.main_pool.get_value_buffer(layer_id)

    def _index(self, layers: dict[int, int], layer_id: int, group: str) -> int:
        if layer_id not in layers:
            raise ValueError(f"layer_id={layer_id} is not in the {group} sparse group")
        return layers[layer_id]

    def get_index_kv_buffer(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = self._index(self.index_kv_layers, layer_id, "index K/V")
        return self.index_kv_pool.get_key_buffer(index), self.index_kv_pool.get_value_buffer(index)

    def get_index_k_buffer(self, layer_id: int) -> torch.Tensor:
        if layer_id in self.index_kv_layers:
            return self.get_index_kv_buffer(layer_id)[0]
        return self.index_k_pool.get_key_buffer(
            self._index(self.index_k_layers, layer_id, "K-only")
        )

    def set_kv_buffer(
        self,
        layer: Any,
        loc: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
    ) -> None:
        self.main_pool.set_kv_buffer(layer, loc, cache_k, cache_v, k_scale, v_scale)

    def set_index_kv_buffer(
        self,
        layer: Any,
        loc: Any,
        cache_idx_k: torch.Tensor,
        cache_idx_v: torch.Tensor,
        k_scale: Any = None,
        v_scale: Any = None,
    ) -> None:
        index = self._index(self.index_kv_layers, layer.layer_id, "index K/V")
        self.index_kv_pool.set_kv_buffer(
            layer, loc, cache_idx_k, cache_idx_v, k_scale, v_scale, layer_id_override=index
        )

    def set_index_k_buffer(
        self, layer: Any, loc: torch.Tensor, cache_idx_k: torch.Tensor, k_scale: Any = None
    ) -> None:
        index = self._index(self.index_k_layers, layer.layer_id, "K-only")
        if cache_idx_k.dtype != self.index_k_pool.dtype and k_scale is not None:
            cache_idx_k = cache_idx_k / k_scale
        self.index_k_pool.set_k_buffer(index, loc, cache_idx_k)

    def set_fused_kv_index_buffer(
        self,
        layer: Any,
        loc: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        cache_idx_k: torch.Tensor,
        cache_idx_v: Optional[torch.Tensor],
        k_scale: Any = None,
        v_scale: Any = None,
        idx_k_scale: Any = None,
        idx_v_scale: Any = None,
    ) -> None:
        self.set_kv_buffer(layer, loc, cache_k, cache_v, k_scale, v_scale)
        if cache_idx_v is None:
            self.set_index_k_buffer(layer, loc, cache_idx_k, idx_k_scale)
        else:
            self.set_index_kv_buffer(layer, loc, cache_idx_k, cache_idx_v, idx_k_scale, idx_v_scale)


@builtin_pool(MINIMAX_SPARSE)
def minimax_sparse_pools(module: Any) -> dict[str, type]:
    """MiniMaxSparseKVPool and its K-only index sub-pool, storing through the era's engine."""
    k_only = type("MHATokenToKOnlyPool", (KOnlyStorage,), {"engine": module.store_engine})
    sparse = type(
        "MiniMaxSparseKVPool",
        (MiniMaxSparseStorage,),
        {"mha_pool_class": module.MHATokenToKVPool, "k_only_pool_class": k_only},
    )
    return {"MHATokenToKOnlyPool": k_only, "MiniMaxSparseKVPool": sparse}
