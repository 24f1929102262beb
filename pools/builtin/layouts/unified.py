"""Storage for SGLang 0.5.23's unified MHA and MLA pools (mem_cache/unified_memory_pool.py): every
layer's rows of a slot live side by side in one entry of one byte buffer, and each layer's buffer
is a strided view into it (slot stride = the whole entry, more than one row). Their doors take
physical ids only: a loc not marked physical is refused.

- MHA: the entry is [K_0 | V_0 | K_1 | V_1 | ...]; MLA: [latent_0 | latent_1 | ...] (rope > 0).
- Every row is a whole number of ROW_BYTES; the entry is padded to a whole number of ENTRY_BYTES.

Era front-ends come from pools.builtin.sut (the era's pool class after this one in the MRO, so
the physical check runs first, then the era's door parses the loc).
"""

from __future__ import annotations

from typing import Any

import torch

from pools.builtin.dense_storage import MHAStorage, MLAStorage

ROW_BYTES = 16  # SGLang's ROW_ALIGN_BYTES
ENTRY_BYTES = 32  # SGLang's ENTRY_ALIGN_BYTES


def entry_bytes(layer_num: int, layer_bytes: int) -> int:
    """One slot's entry: every layer's rows side by side, rounded up to ENTRY_BYTES."""
    return -(-layer_num * layer_bytes // ENTRY_BYTES) * ENTRY_BYTES


class _UnifiedBuffer:
    """One byte buffer of (size + page_size) entries, and per-layer strided views into it."""

    size: int
    page_size: int
    layer_num: int
    store_dtype: torch.dtype
    device: str
    # A byte buffer another sub-pool shares (pools/builtin/unified_swa_storage.py), else None: its
    # own.
    shared_raw: torch.Tensor | None = None
    # A fused draft's side pool (pools/builtin/unified_swa_storage.py): the layer rows an entry
    # holds, None for this pool's own, and the first of them that this pool's layers are.
    entry_layers: int | None = None
    first_layer: int = 0

    def _entry_views(self, rows: dict[str, tuple[int, ...]]) -> dict[str, list[torch.Tensor]]:
        """For each part (name -> row shape, in entry order within a layer), its view per layer."""
        item = torch.empty((), dtype=self.store_dtype).element_size()
        row_bytes = {name: item * _count(shape) for name, shape in rows.items()}
        for name, width in row_bytes.items():
            if width % ROW_BYTES:
                raise ValueError(
                    f"a unified pool needs every row to be a multiple of {ROW_BYTES} bytes; this "
                    f"pool has a {width}-byte {name} row"
                )
        layer_bytes = sum(row_bytes.values())
        self.entry_bytes = entry_bytes(self.entry_layers or self.layer_num, layer_bytes)
        if self.shared_raw is None:
            slots = self.size + self.page_size
            self.raw = torch.zeros(slots * self.entry_bytes, dtype=torch.uint8, device=self.device)
        else:  # a UnifiedSWAKVPool's sub-pool: views over all of the shared buffer, in pages
            slots = self.shared_raw.numel() // self.entry_bytes // self.page_size * self.page_size
            self.raw = self.shared_raw
        typed = self.raw.view(self.store_dtype)
        views: dict[str, list[torch.Tensor]] = {name: [] for name in rows}
        for layer in range(self.layer_num):
            offset = (self.first_layer + layer) * layer_bytes
            for name, shape in rows.items():
                strides = (self.entry_bytes // item, *_dense_strides(shape))
                views[name].append(
                    torch.as_strided(typed, (slots, *shape), strides, offset // item)
                )
                offset += row_bytes[name]
        return views


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_count(shape[index + 1 :]) for index in range(len(shape)))


def _check_physical(loc_info: Any, door: str) -> None:
    if not getattr(loc_info, "physical", False):
        raise ValueError(
            f"{door}: write loc is not marked physical. Hand the pool "
            "KVWriteLoc.for_batch(forward_batch) or KVWriteLoc(loc, physical=True)"
        )


class UnifiedMHAStorage(_UnifiedBuffer, MHAStorage):
    kv_cache_layout = "unified"

    def _create_buffers(self) -> None:
        views = self._entry_views(
            {"K": (self.head_num, self.head_dim), "V": (self.head_num, self.v_head_dim)}
        )
        self.k_buffer, self.v_buffer = views["K"], views["V"]

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _check_physical(loc_info, "set_kv_buffer (MHA)")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)


class UnifiedMLAStorage(_UnifiedBuffer, MLAStorage):
    kv_cache_layout = "unified"

    def _create_buffers(self) -> None:
        if self.qk_rope_head_dim <= 0:
            raise ValueError("a unified MLA pool needs qk_rope_head_dim > 0")
        self.kv_buffer = self._entry_views({"latent": (1, self.kv_cache_dim)})["latent"]

    def set_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _check_physical(loc_info, "set_kv_buffer (MLA)")
        super().set_kv_buffer(layer, loc_info, *args, **kwargs)

    def set_mla_kv_buffer(self, layer: Any, loc_info: Any, *args: Any, **kwargs: Any) -> None:
        _check_physical(loc_info, "set_mla_kv_buffer (MLA)")
        super().set_mla_kv_buffer(layer, loc_info, *args, **kwargs)
