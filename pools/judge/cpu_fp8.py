"""The judge's pool of a CPU server's fp8_e4m3 cache (the mha_cpu_fp8 kind, SGLang 0.5.23's
MHATokenToKVPool with CPUFP8KVCacheMethod): every write divides copies of k and v by their
scales, 1.0 where None, whatever the caller's dtype, and casts them; the caller's tensors are
never changed, unlike the unquantized door's in-place division."""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.divide import divide_in_place
from pools.judge.eras import judge_over_era_doors
from pools.judge.token_major import MHAJudgePool
from pools.kinds.layout import MHA_CPU_FP8


class CPUFP8JudgePool(MHAJudgePool):
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
        k, v = cache_k.clone(), cache_v.clone()
        divide_in_place(k, 1.0 if k_scale is None else k_scale)
        divide_in_place(v, 1.0 if v_scale is None else v_scale)
        super()._store(layer, loc, k, v, None, None, layer_id_override)


judge_over_era_doors(MHA_CPU_FP8, CPUFP8JudgePool)
