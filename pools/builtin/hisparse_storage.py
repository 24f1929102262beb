"""The builtin HiSparse device pools (SGLang 0.5.23 mem_cache/hisparse_memory_pool.py): an MHA
pool (HiSparseMHAMainPool, MiniMax-M3's) or a DSA MLA pool (HiSparseDSATokenToKVPool) whose
doors write a logical token id at its device slot, full_to_hisparse_device_index_mapping[loc],
as a bare loc through the era's MHA or MLA door (the DSA doors take no scales). The DSA pool
requires 64-token pages, and keeps its indexer keys by logical id (pools/builtin/dsa_storage.py).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.dsa_storage import DSAStorage
from pools.kinds.hybrid import HISPARSE_DSA, HISPARSE_MHA
from pools.kinds.pool_classes import builtin_pool
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
    """Before the era's MHATokenToKVPool in the MRO (pools/builtin/sut.py)."""

    def set_kv_buffer(
        self, layer: Any, loc: Any, cache_k: torch.Tensor, cache_v: torch.Tensor, *args, **kwargs
    ) -> None:
        device_loc = self.translate_loc_to_hisparse_device(loc)
        super().set_kv_buffer(layer, device_loc, cache_k, cache_v, *args, **kwargs)


class HiSparseDSAStorage(HiSparseMapping, DSAStorage):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor; it keeps
    indexer keys for host_to_device_ratio times its size of logical ids."""

    unregistered = AttributeError

    def __init__(self, size: int, *args: Any, host_to_device_ratio: int = 2, **kwargs: Any):
        super().__init__(size, *args, index_buf_size=size * host_to_device_ratio, **kwargs)

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


@builtin_pool(HISPARSE_MHA)
def hisparse_mha_pool(module: Any) -> type:
    return type("HiSparseMHAMainPool", (HiSparseMHAStorage, module.MHATokenToKVPool), {})


@builtin_pool(HISPARSE_DSA)
def hisparse_dsa_pool(module: Any) -> type:
    return type("HiSparseDSATokenToKVPool", (HiSparseDSAStorage, module.MLATokenToKVPool), {})
