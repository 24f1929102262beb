"""The judge's UnifiedDraftSWAKVPool, as SGLang 0.5.23's (mem_cache/unified_draft_pool.py,
mem_cache/layout/fused_draft.py): a draft model's SWA pool fused into the target's unified pool.

- The target's full and SWA sub-pools (pools/judge/unified_swa.py) carry the draft in every
  entry: the target's own rows first ([K_0 | V_0 | ...] of `host_layer_num` layers), then a
  dense draft region of lanes, each lane one draft layer of one runner ([dK | dV]). The runners'
  lane ranges tile the region in runner order; this pool is runner `runner` of `runner_num`, each
  runner holding all of the draft's layers of that sub-pool, so its layer i of a sub-pool is lane
  runner * layers + i. The entry is padded to 32 bytes; the draft's rows start where the host's
  end (both are whole 16-byte rows here).
- A layer's buffer is the view of its lane in every entry, with the entry as slot stride, over
  the same physical slots as the target.
- set_kv_buffer unwraps (loc, swa_loc, full_loc) and reads the physical mark; a SWA layer asserts
  a swa_loc and writes there, a full layer writes at loc and ignores full_loc ("the capture-stable
  full_loc alias is sized for the target's writes"), either way through a fresh KVWriteLoc that
  keeps the mark, so an unmarked loc is refused by the side pool (an MHA pool that requires one).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.unified_swa import JudgeUnifiedSWAPool
from pools.kinds.composite import SWA_UNIFIED_DRAFT
from pools.kinds.pool_classes import judge_pool


class JudgeUnifiedDraftSWAPool(JudgeUnifiedSWAPool):
    """The unified SWA pool's routing over a draft runner's lanes of both sub-pools' entries."""

    def __init__(self, *, host_layer_num: int, runner: int, runner_num: int, **kwargs: Any) -> None:
        if not 0 <= runner < runner_num or host_layer_num < 0:
            raise ValueError(f"runner {runner} of {runner_num}, {host_layer_num} host layers")
        self.host_layer_num, self.runner, self.runner_num = host_layer_num, runner, runner_num
        super().__init__(**kwargs)

    def _entry_rows(self, layers: int) -> tuple[int, int]:
        """The host's rows, then every runner's lanes; this runner's come after its elders'."""
        return (
            self.host_layer_num + self.runner_num * layers,
            self.host_layer_num + self.runner * layers,
        )

    def _full_slots(self, loc: torch.Tensor, full_loc: Optional[torch.Tensor]) -> torch.Tensor:
        """loc: the draft's full side never reads full_loc."""
        return loc


@judge_pool(SWA_UNIFIED_DRAFT)
def unified_draft_judge(module) -> dict[str, type]:
    if not hasattr(module.era_front.write_loc, "physical"):  # its sub-pools need the mark
        return {}
    name = SWA_UNIFIED_DRAFT.sglang_class
    sub_pool = {"unified_mha_class": module.UnifiedMHATokenToKVPool}
    return {name: type(name, (JudgeUnifiedDraftSWAPool,), sub_pool)}
