"""The judge's LayerSplitDSATokenToKVPool, as SGLang 0.5.23's (mem_cache/dsa_cache_layer_split.py):
a DSA pool (pools/judge/dsa_index.py) of which each rank of an attention context-parallel group
keeps a contiguous share of the layers.

- Rank r of N owns layers [start, end): with base = layers // N and rest = layers % N,
  start = r * base + min(r, rest) and end = start + base + (1 if r < rest else 0). An owned layer
  has its rows and indexer cache; every other layer's buffers have no rows.
- Every door of a layer the rank does not own writes nothing. An owned layer is written as the
  DSA pool writes it, at the loc as given: set_kv_buffer the latent row (no scales, slot 0
  included), set_mla_kv_buffer nope and rope (the store skips the reserved slot 0), the indexer
  keys at the loc. Neither K/V door takes layer_id_override.
- layer_shard_size <= 1 raises AssertionError.
"""

from __future__ import annotations

from typing import Any

import torch

from pools.judge.dsa_index import JudgeDSAPool
from pools.kinds.hybrid import LAYER_SPLIT_DSA
from pools.kinds.pool_classes import judge_pool


def owned_layers(rank: int, size: int, layers: int) -> range:
    base, rest = divmod(layers, size)
    start = rank * base + min(rank, rest)
    return range(start, start + base + (1 if rank < rest else 0))


class LayerSplitDSAJudgePool(JudgeDSAPool):
    """Before the era's MLATokenToKVPool in the MRO (pools/judge/__init__.py)."""

    def __init__(self, *args: Any, layer_shard_rank: int, layer_shard_size: int, **kwargs: Any):
        if layer_shard_size <= 1:
            raise AssertionError("LayerSplitDSATokenToKVPool requires layer_shard_size > 1")
        super().__init__(*args, **kwargs)
        self.owned = owned_layers(layer_shard_rank, layer_shard_size, self.layer_num)
        for local in range(self.layer_num):
            if local not in self.owned:  # a peer's layer: no rows here
                self.kv_buffer[local] = self.kv_buffer[local][:0]
                self.index_k_with_scale_buffer[local] = self.index_k_with_scale_buffer[local][:0]

    def _owns(self, layer_id: int) -> bool:
        return layer_id - self.start_layer in self.owned

    def set_kv_buffer(self, layer: Any, loc_info: Any, cache_k: torch.Tensor, cache_v: Any) -> None:
        if self._owns(layer.layer_id):
            super().set_kv_buffer(layer, loc_info, cache_k, cache_v)

    def set_mla_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k_nope: torch.Tensor, cache_k_rope: Any
    ) -> None:
        if self._owns(layer.layer_id):
            super().set_mla_kv_buffer(layer, loc_info, cache_k_nope, cache_k_rope)

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if self._owns(layer_id):
            super().set_index_k_scale_buffer(layer_id, loc, index_k, index_k_scale)


@judge_pool(LAYER_SPLIT_DSA)
def layer_split_dsa_judge(module) -> type:
    name = LAYER_SPLIT_DSA.sglang_class
    return type(name, (LayerSplitDSAJudgePool, module.MLATokenToKVPool), {})
