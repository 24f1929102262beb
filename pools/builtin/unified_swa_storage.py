"""The builtin UnifiedSWAKVPool (SGLang 0.5.23 mem_cache/unified_memory_pool.py): a full and a SWA
sub-pool of unified MHA entries over one shared byte buffer, each sub-pool's views from byte 0.

The buffer holds `swa_slot_base + size_swa + page_size` SWA entries: the full sub-pool's slots
are its bottom, the SWA sub-pool's from `swa_slot_base` up (where the harness's SWA ids land,
scenarios.slots.unified_swa_slot), and page 0 is the padding sink both share. Full layers write
at full_loc, else loc; SWA layers at swa_loc, asserted; both through a KVWriteLoc that keeps the
physical mark, which the unified sub-pools check.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.layouts.unified import entry_bytes
from pools.builtin.swa_storage import SWAStorage
from pools.dtypes import store_dtype_of
from pools.kinds.composite import SWA_UNIFIED
from pools.kinds.pool_classes import builtin_pool


class UnifiedSWAStorage(SWAStorage):
    """SWAStorage's layer routing and buffer reads over sub-pools of one shared buffer; it builds
    them itself (SGLang's does not call SWAKVPool.__init__ either)."""

    sub_pool_class: type  # the era's UnifiedMHATokenToKVPool, bound by pools.builtin.sut
    write_loc_class: type  # the era's KVWriteLoc

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
        row = head_num * (head_dim + (v_head_dim or head_dim)) * store_dtype_of(dtype).itemsize
        full_rows = self._entry_rows(len(full_attention_layer_ids))
        swa_rows = self._entry_rows(len(swa_attention_layer_ids))
        full_entry, swa_entry = entry_bytes(full_rows[0], row), entry_bytes(swa_rows[0], row)
        if swa_slot_base % page_size or swa_slot_base * swa_entry < (size + page_size) * full_entry:
            raise ValueError(
                f"swa_slot_base {swa_slot_base} is not a page above the full sub-pool's bytes"
            )
        shared = torch.zeros(
            (swa_slot_base + size_swa + page_size) * swa_entry, dtype=torch.uint8, device=device
        )
        common = dict(
            page_size=page_size, dtype=dtype, head_num=head_num, head_dim=head_dim,
            v_head_dim=v_head_dim, device=device,
        )  # fmt: skip

        def sub_pool(side_size: int, layer_ids: list[int], rows: tuple[int, int]) -> Any:
            attributes = {"shared_raw": shared, "entry_layers": rows[0], "first_layer": rows[1]}
            cls = type(self.sub_pool_class.__name__, (self.sub_pool_class,), attributes)
            return cls(size=side_size, layer_num=len(layer_ids), **common)

        self.full_kv_pool = sub_pool(size, full_attention_layer_ids, full_rows)
        self.swa_kv_pool = sub_pool(size_swa, swa_attention_layer_ids, swa_rows)
        self.use_mla, self.full_to_swa_index_mapping = False, None
        self.layers_mapping = {
            **{layer: (index, False) for index, layer in enumerate(full_attention_layer_ids)},
            **{layer: (index, True) for index, layer in enumerate(swa_attention_layer_ids)},
        }

    def _entry_rows(self, layers: int) -> tuple[int, int]:
        """(layer rows per entry, the first that is this pool's) of a sub-pool of `layers`."""
        return layers, 0

    def _full_slots(self, loc: torch.Tensor, full_loc: Optional[torch.Tensor]) -> torch.Tensor:
        return loc if full_loc is None else full_loc

    def register_mapping(self, full_to_swa_index_mapping: torch.Tensor) -> None:
        """A no-op, as SGLang's: the backend hands this pool physical SWA ids."""

    def set_kv_buffer(
        self,
        layer: Any,
        loc_info: Any,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Any = 1.0,
        v_scale: Any = 1.0,
    ) -> None:
        loc, swa_loc, full_loc = self.unwrap_write_loc(loc_info)
        physical = getattr(loc_info, "physical", False)
        pool, local_id, is_swa = self._sub_pool(layer.layer_id)
        if is_swa:
            assert swa_loc is not None, "UnifiedSWAKVPool.set_kv_buffer: SWA layer has no swa_loc"
        target = swa_loc if is_swa else self._full_slots(loc, full_loc)
        pool.set_kv_buffer(
            None,
            self.write_loc_class(target, physical=physical),
            cache_k,
            cache_v,
            k_scale,
            v_scale,
            layer_id_override=local_id,
        )


def unified_routing(module: Any) -> dict[str, Any]:
    """What a unified SWA pool's sub-pools are built with: the era's unified MHA pool, its
    KVWriteLoc and unwrap (they need the physical mark, which only the current era has)."""
    return {
        "sub_pool_class": module.UnifiedMHATokenToKVPool,
        "write_loc_class": module.KVWriteLoc,
        "unwrap_write_loc": staticmethod(module.unwrap_write_loc),
    }


@builtin_pool(SWA_UNIFIED)
def unified_swa_pool(module: Any) -> dict[str, type]:
    if not hasattr(getattr(module, "KVWriteLoc", None), "physical"):
        return {}
    name = SWA_UNIFIED.sglang_class
    return {name: type(name, (UnifiedSWAStorage,), unified_routing(module))}
