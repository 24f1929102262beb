"""The judge's MiniMaxSparseKVPool, as SGLang 0.5.23's (mem_cache/memory_pool.py) without HiSparse:
every layer, dense or sparse, keeps its K/V in one main MHA pool (reached by layer_id -
start_layer); each sparse layer also keeps an index K of one head, in an MHA index pool with an
index V, or, for a value-disabled layer, in a K-only pool (MHATokenToKOnlyPool). An index pool
reaches a layer by its position among the sparse layers of its sort.

- set_kv_buffer(layer, loc, k, v, k_scale, v_scale): the main pool's MHA door, any layer.
- set_index_kv_buffer(layer, loc, idx_k, idx_v, k_scale, v_scale): the index pool's MHA door
  (so a scale divides the caller's idx_k and idx_v in place before a cast); a layer without an
  index V raises ValueError.
- set_index_k_buffer(layer, loc, idx_k, k_scale): a value-disabled layer only (else ValueError).
  A scale divides a *copy* when idx_k is not already in the pool dtype (the caller's tensor is
  left as it was); then the K-only store casts and writes `k_buffer[local][loc] = rows`, with no
  KVWriteLoc unwrapping.
- set_fused_kv_index_buffer(layer, loc, k, v, idx_k, idx_v, k_scale, v_scale, idx_k_scale,
  idx_v_scale): on a CPU the separate stores in that order: main K/V, then the index K (idx_v
  None) or the index K/V. (On CUDA with unit scales SGLang may take one fused copy instead; the
  bytes it must leave are the same.)
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.casts import bits_view
from pools.judge.divide import divide_in_place
from pools.judge.token_major import JudgeTokenPool
from pools.judge.token_writes import write_rows
from pools.kinds.hybrid import MINIMAX_SPARSE
from pools.kinds.pool_classes import judge_pool


class JudgeKOnlyPool(JudgeTokenPool):
    """MHATokenToKOnlyPool: a K buffer of (size + page_size, heads, dim) per layer, no V."""

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
    ):
        super().__init__(size, page_size, dtype, layer_num, device)
        self.head_num, self.head_dim = head_num, head_dim
        self.k_buffer = self._zeros(head_num, head_dim)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self._view(self.k_buffer[layer_id - self.start_layer])

    def set_k_buffer(self, layer_id: int, loc: torch.Tensor, cache_k: torch.Tensor) -> None:
        # SGLang indexes k_buffer[layer_id] itself, without start_layer (0 for these pools).
        write_rows(bits_view(self.k_buffer[layer_id]), loc, self._stored(cache_k))


class JudgeMiniMaxSparsePool:
    mha_pool_class: type  # the judge's MHATokenToKVPool of the era

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
    ):
        end_layer = end_layer if end_layer is not None else len(dense_layer_ids + sparse_layer_ids)
        self.size, self.page_size, self.dtype, self.device = size, page_size, dtype, device
        self.start_layer = start_layer
        local = [i for i in sparse_layer_ids if start_layer <= i < end_layer]
        k_only = set(disable_value_sparse_layer_ids or ())
        self.index_kv_ids = {g: i for i, g in enumerate(x for x in local if x not in k_only)}
        self.index_k_ids = {g: i for i, g in enumerate(x for x in local if x in k_only)}
        dense = [i for i in dense_layer_ids if start_layer <= i < end_layer]
        common = dict(size=size, page_size=page_size, device=device)
        self.main_pool = self.mha_pool_class(
            dtype=dtype, head_num=head_num, head_dim=head_dim,
            layer_num=len(dense) + len(local), start_layer=start_layer, end_layer=end_layer,
            **common,
        )  # fmt: skip
        index = dict(dtype=dtype, head_num=1, head_dim=idx_head_dim, **common)
        self.index_kv_pool = (
            self.mha_pool_class(layer_num=len(self.index_kv_ids), **index)
            if self.index_kv_ids
            else None
        )
        self.index_k_pool = (
            JudgeKOnlyPool(layer_num=len(self.index_k_ids), **index) if self.index_k_ids else None
        )

    @property
    def kept_sinks(self) -> set[int]:
        return set()  # MHA stores keep no reserved slot

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.main_pool.get_key_buffer(layer_id)

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.main_pool.get_value_buffer(layer_id)

    def _index_kv_id(self, layer_id: int) -> int:
        if layer_id not in self.index_kv_ids:
            raise ValueError(f"layer_id={layer_id} does not have an index V cache")
        return self.index_kv_ids[layer_id]

    def _index_k_id(self, layer_id: int) -> int:
        if layer_id not in self.index_k_ids:
            raise ValueError(f"layer_id={layer_id} is not in the K-only sparse group")
        return self.index_k_ids[layer_id]

    def get_index_kv_buffer(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        local = self._index_kv_id(layer_id)
        return self.index_kv_pool.get_key_buffer(local), self.index_kv_pool.get_value_buffer(local)

    def get_index_k_buffer(self, layer_id: int) -> torch.Tensor:
        if layer_id in self.index_k_ids:
            return self.index_k_pool.get_key_buffer(self.index_k_ids[layer_id])
        return self.index_kv_pool.get_key_buffer(self._index_kv_id(layer_id))

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
        local = self._index_kv_id(layer.layer_id)
        self.index_kv_pool.set_kv_buffer(
            layer, loc, cache_idx_k, cache_idx_v, k_scale, v_scale, layer_id_override=local
        )

    def set_index_k_buffer(
        self, layer: Any, loc: torch.Tensor, cache_idx_k: torch.Tensor, k_scale: Any = None
    ) -> None:
        local = self._index_k_id(layer.layer_id)
        if cache_idx_k.dtype != self.index_k_pool.dtype and k_scale is not None:
            cache_idx_k = cache_idx_k.clone()  # SGLang's `cache_idx_k / k_scale`: a new tensor
            divide_in_place(cache_idx_k, k_scale)
        self.index_k_pool.set_k_buffer(local, loc, cache_idx_k)

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


@judge_pool(MINIMAX_SPARSE)
def minimax_sparse_judges(module) -> dict[str, type]:
    sparse = type(
        "MiniMaxSparseKVPool",
        (JudgeMiniMaxSparsePool,),
        {"mha_pool_class": module.MHATokenToKVPool},
    )
    return {"MiniMaxSparseKVPool": sparse, "MHATokenToKOnlyPool": JudgeKOnlyPool}
