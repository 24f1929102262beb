"""The judge's UnifiedSWAKVPool, as SGLang 0.5.23's (mem_cache/unified_memory_pool.py):

- one uint8 buffer that a full and a SWA sub-pool of unified MHA entries share, each sub-pool's
  views starting at byte 0 with its own entry as slot stride (pools/judge/unified.py). The
  harness sizes it as SGLang's two-ended allocator would leave it in use: the full sub-pool's
  size + page_size slots at the bottom, the SWA sub-pool's slots from `swa_slot_base` up, its
  page 0 the padding sink both share; `swa_slot_base` must clear every full byte;
- set_kv_buffer unwraps (loc, swa_loc, full_loc) and reads the physical mark; a SWA layer asserts
  a swa_loc and writes the SWA sub-pool there, a full layer writes the full sub-pool at full_loc,
  or loc where none is given (unlike SWAKVPool, which ignores full_loc); either way through a
  fresh KVWriteLoc carrying the mark, so an unmarked loc is refused by the sub-pool, with the
  layer's id inside its sub-pool and the scales;
- register_mapping does nothing: the call site hands it physical SWA ids.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.judge.hybrid import JudgeHybridPool
from pools.judge.unified import entry_bytes
from pools.kinds.composite import SWA_UNIFIED
from pools.kinds.pool_classes import judge_pool
from pools.write_loc import CurrentWriteLoc, unwrap_current


class JudgeUnifiedSWAPool(JudgeHybridPool):
    """The judge's SWA routing and buffer reads (pools/judge/hybrid.py) over sub-pools of one
    shared buffer, built here (SGLang's does not call SWAKVPool.__init__ either)."""

    unified_mha_class: type  # the judge's UnifiedMHATokenToKVPool, bound by judge_module

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
        swa_slot_base: int,
        v_head_dim: Optional[int] = None,
        enable_memory_saver: bool = False,
        **kwargs: Any,
    ):
        self.size, self.size_swa, self.page_size = size, size_swa, page_size
        self.dtype, self.device, self.start_layer = dtype, device, 0
        self.layer_num = len(full_attention_layer_ids) + len(swa_attention_layer_ids)
        v_head_dim = head_dim if v_head_dim is None else v_head_dim
        row = head_num * (head_dim + v_head_dim) * dtype.itemsize  # fp8: one byte, as uint8
        full_rows = self._entry_rows(len(full_attention_layer_ids))
        swa_rows = self._entry_rows(len(swa_attention_layer_ids))
        full_entry, swa_entry = entry_bytes(full_rows[0], row), entry_bytes(swa_rows[0], row)
        if swa_slot_base % page_size or swa_slot_base * swa_entry < (size + page_size) * full_entry:
            raise ValueError(
                f"swa_slot_base {swa_slot_base} is not a page above the full sub-pool's bytes"
            )
        raw = torch.zeros((swa_slot_base + size_swa + page_size) * swa_entry, dtype=torch.uint8)
        shape = dict(
            page_size=page_size, dtype=dtype, head_num=head_num, head_dim=head_dim,
            v_head_dim=v_head_dim, device=device,
        )  # fmt: skip
        self.full_kv_pool, self.swa_kv_pool = (
            type(
                "UnifiedMHATokenToKVPool",
                (self.unified_mha_class,),
                {"shared_raw": raw, "entry_layers": rows[0], "first_layer": rows[1]},
            )(size=side_size, layer_num=len(layer_ids), **shape)
            for side_size, layer_ids, rows in (
                (size, full_attention_layer_ids, full_rows),
                (size_swa, swa_attention_layer_ids, swa_rows),
            )
        )
        self.layers_mapping: dict[int, tuple[int, bool]] = {}
        sides = ((False, full_attention_layer_ids), (True, swa_attention_layer_ids))
        for is_swa, layer_ids in sides:
            for local_id, global_id in enumerate(layer_ids):
                self.layers_mapping[global_id] = (local_id, is_swa)
        self.use_mla, self.full_to_swa_index_mapping = False, None

    def _entry_rows(self, layers: int) -> tuple[int, int]:
        """(layer rows in a sub-pool's entry, the first of them this pool's layers are) for a
        sub-pool of `layers` layers: here the entry is theirs alone."""
        return layers, 0

    def _full_slots(self, loc: torch.Tensor, full_loc: Optional[torch.Tensor]) -> torch.Tensor:
        """Where a full layer writes: full_loc, a pre-translated physical loc, where given."""
        return loc if full_loc is None else full_loc

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        """Nothing to keep: the call site hands this pool physical SWA ids."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        loc, swa_loc, full_loc = unwrap_current(loc_info)
        physical = bool(getattr(loc_info, "physical", False))
        pool, local_id, is_swa = self._route(layer.layer_id)
        if is_swa:
            if swa_loc is None:
                raise AssertionError("UnifiedSWAKVPool.set_kv_buffer: a SWA layer without swa_loc")
            slots = swa_loc
        else:
            slots = self._full_slots(loc, full_loc)
        pool.set_kv_buffer(
            None,
            CurrentWriteLoc(slots, physical=physical),
            cache_k,
            cache_v,
            k_scale,
            v_scale,
            layer_id_override=local_id,
        )


@judge_pool(SWA_UNIFIED)
def unified_swa_judge(module) -> dict[str, type]:
    if not hasattr(module.era_front.write_loc, "physical"):  # its sub-pools need the mark
        return {}
    sub_pool = {"unified_mha_class": module.UnifiedMHATokenToKVPool}
    return {
        SWA_UNIFIED.sglang_class: type(SWA_UNIFIED.sglang_class, (JudgeUnifiedSWAPool,), sub_pool)
    }
