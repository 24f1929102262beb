"""The builtin LayerSplitDSATokenToKVPool (SGLang 0.5.23 mem_cache/dsa_cache_layer_split.py): a DSA
pool whose layers are split over an attention context-parallel group of `layer_shard_size` ranks,
each keeping a contiguous share (get_layer_shard_range). A peer's layer has buffers of no rows,
and every door of it writes nothing; an owned layer is written as the DSA pool writes it.
"""

from __future__ import annotations

from typing import Any

import torch

from pools.builtin.dsa_storage import DSAStorage
from pools.kinds.hybrid import LAYER_SPLIT_DSA
from pools.kinds.pool_classes import builtin_pool


class LayerSplitDSAStorage(DSAStorage):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor plus the
    layer shard."""

    def __init__(self, *args: Any, layer_shard_rank: int, layer_shard_size: int, **kwargs: Any):
        assert layer_shard_size > 1, "LayerSplitDSATokenToKVPool requires layer_shard_size > 1"
        super().__init__(*args, **kwargs)
        base, rest = divmod(self.layer_num, layer_shard_size)
        self.layer_shard_start = layer_shard_rank * base + min(layer_shard_rank, rest)
        self.layer_shard_end = self.layer_shard_start + base + int(layer_shard_rank < rest)
        for local in range(self.layer_num):
            if not self.layer_shard_start <= local < self.layer_shard_end:
                self.kv_buffer[local] = self.kv_buffer[local].narrow(0, 0, 0)
                self.index_k_with_scale_buffer[local] = self.index_k_with_scale_buffer[local][:0]

    def _is_layer_owned(self, layer_id: int) -> bool:
        return self.layer_shard_start <= layer_id - self.start_layer < self.layer_shard_end

    def set_kv_buffer(self, layer: Any, loc_info: Any, cache_k: torch.Tensor, cache_v: Any) -> None:
        if self._is_layer_owned(layer.layer_id):
            super().set_kv_buffer(layer, loc_info, cache_k, cache_v)

    def set_mla_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k_nope: torch.Tensor, cache_k_rope: Any
    ) -> None:
        if self._is_layer_owned(layer.layer_id):
            super().set_mla_kv_buffer(layer, loc_info, cache_k_nope, cache_k_rope)

    def set_index_k_scale_buffer(
        self, layer_id: int, loc: torch.Tensor, index_k: torch.Tensor, index_k_scale: torch.Tensor
    ) -> None:
        if self._is_layer_owned(layer_id):
            super().set_index_k_scale_buffer(layer_id, loc, index_k, index_k_scale)


@builtin_pool(LAYER_SPLIT_DSA)
def layer_split_dsa_pool(module: Any) -> type:
    name = LAYER_SPLIT_DSA.sglang_class
    return type(name, (LayerSplitDSAStorage, module.MLATokenToKVPool), {})
