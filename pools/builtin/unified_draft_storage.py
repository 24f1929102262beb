"""The builtin UnifiedDraftSWAKVPool (SGLang 0.5.23 mem_cache/unified_draft_pool.py): a draft
model's SWA pool over lanes fused into the target's unified full and SWA sub-pools' entries.

Every entry holds the target's `host_layer_num` layers' rows, then the lanes of `runner_num`
draft runners in runner order, each runner all of the draft's layers of that sub-pool; this pool
is runner `runner`'s. Full layers write at loc (a fused draft never reads full_loc), SWA layers
at swa_loc, as the unified SWA pool's routing otherwise (pools/builtin/unified_swa_storage.py).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.unified_swa_storage import UnifiedSWAStorage, unified_routing
from pools.kinds.composite import SWA_UNIFIED_DRAFT
from pools.kinds.pool_classes import builtin_pool


class UnifiedDraftSWAStorage(UnifiedSWAStorage):
    def __init__(self, *, host_layer_num: int, runner: int, runner_num: int, **kwargs: Any):
        assert 0 <= runner < runner_num, f"runner {runner} of {runner_num}"
        self.host_layer_num, self.runner, self.runner_num = host_layer_num, runner, runner_num
        super().__init__(**kwargs)

    def _entry_rows(self, layers: int) -> tuple[int, int]:
        lanes_before = self.runner * layers
        return self.host_layer_num + self.runner_num * layers, self.host_layer_num + lanes_before

    def _full_slots(self, loc: torch.Tensor, full_loc: Optional[torch.Tensor]) -> torch.Tensor:
        return loc


@builtin_pool(SWA_UNIFIED_DRAFT)
def unified_draft_pool(module: Any) -> dict[str, type]:
    if not hasattr(getattr(module, "KVWriteLoc", None), "physical"):
        return {}
    name = SWA_UNIFIED_DRAFT.sglang_class
    return {name: type(name, (UnifiedDraftSWAStorage,), unified_routing(module))}
