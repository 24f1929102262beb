"""The judge's HiSparse device pools, as SGLang 0.5.23's (mem_cache/hisparse_memory_pool.py):
an MHA or DSA (MLA) pool whose writes land at a logical token id's device slot.

- register_mapping(full_to_hisparse_device_index_mapping) keeps the tensor it is handed.
- Each door unwraps (loc, _, _) and writes at mapping[loc] (torch indexing: a negative id counts
  from the end, one past the end raises IndexError; with no mapping registered the MHA pool's
  assert raises AssertionError, the DSA pool's missing attribute AttributeError), as a
  bare loc, through the era's MHA or MLA door: HiSparseMHAMainPool.set_kv_buffer hands any scales
  on, HiSparseDSATokenToKVPool.set_kv_buffer and set_mla_kv_buffer take none.
- The DSA pool requires 64-token pages (DSATokenToKVPool asserts it with one index K pool). Its
  indexer keys (pools/judge/dsa_index.py) are kept by logical id, host_to_device_ratio (2) times
  the pool's size of them, not at the device slot.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from pools.judge.dsa_index import JudgeDSAPool
from pools.kinds.hybrid import HISPARSE_DSA, HISPARSE_MHA
from pools.kinds.pool_classes import judge_pool
from pools.write_loc import unwrap_current


class HiSparseTranslation:
    device_slots: Optional[torch.Tensor] = None
    unregistered: type = AssertionError  # what a write raises before register_mapping

    def register_mapping(self, full_to_hisparse_device_index_mapping: torch.Tensor) -> None:
        self.device_slots = full_to_hisparse_device_index_mapping

    def _device(self, loc_info: Any) -> torch.Tensor:
        loc, _, _ = unwrap_current(loc_info)
        if not isinstance(loc, torch.Tensor):  # what indexing the mapping with it raises
            raise IndexError(f"only tensors index the mapping (got {type(loc).__name__})")
        if self.device_slots is None:
            raise self.unregistered("no HiSparse mapping registered")
        mapping = self.device_slots.cpu().numpy()
        slots = loc.cpu().numpy().astype(np.int64)
        if slots.size and (slots.max() >= len(mapping) or slots.min() < -len(mapping)):
            raise IndexError(f"a loc outside the mapping's {len(mapping)} entries")
        return torch.from_numpy(mapping[slots].copy())


class HiSparseMHAJudgePool(HiSparseTranslation):
    """Before the era's MHATokenToKVPool in the MRO (pools/judge/__init__.py)."""

    def set_kv_buffer(
        self, layer: Any, loc: Any, cache_k: torch.Tensor, cache_v: torch.Tensor, *args, **kwargs
    ) -> None:
        super().set_kv_buffer(layer, self._device(loc), cache_k, cache_v, *args, **kwargs)


class HiSparseDSAJudgePool(HiSparseTranslation, JudgeDSAPool):
    """Before the era's MLATokenToKVPool in the MRO, with DSATokenToKVPool's constructor; its
    indexer keys are kept for host_to_device_ratio times the pool's size of logical ids."""

    unregistered = AttributeError

    def __init__(self, size: int, *args: Any, host_to_device_ratio: int = 2, **kwargs: Any):
        super().__init__(size, *args, index_buf_size=size * host_to_device_ratio, **kwargs)

    def set_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k: torch.Tensor, cache_v: torch.Tensor
    ) -> None:
        super().set_kv_buffer(layer, self._device(loc_info), cache_k, cache_v)

    def set_mla_kv_buffer(
        self, layer: Any, loc_info: Any, cache_k_nope: torch.Tensor, cache_k_rope: Any
    ) -> None:
        super().set_mla_kv_buffer(layer, self._device(loc_info), cache_k_nope, cache_k_rope)


@judge_pool(HISPARSE_MHA)
def hisparse_mha_judge(module) -> type:
    return type("HiSparseMHAMainPool", (HiSparseMHAJudgePool, module.MHATokenToKVPool), {})


@judge_pool(HISPARSE_DSA)
def hisparse_dsa_judge(module) -> type:
    return type("HiSparseDSATokenToKVPool", (HiSparseDSAJudgePool, module.MLATokenToKVPool), {})
