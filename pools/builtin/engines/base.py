"""The store-engine interface: how bytes get from the caller's tensors into a buffer.

Pools own the era logic (argument parsing, SWA routing); an engine owns only the bytes.
Every engine must leave the caller's tensors and the buffer in exactly the state SGLang's
MHA pool would: `cache_k.div_(k_scale)` in place in the input dtype, then a cast to the
pool dtype, then a view as the storage dtype, then a row scatter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Sequence, Union

import torch

from pools.builtin.fp4 import quantiser as fp4_reference
from pools.builtin.layouts.paged import Layout, check_slots

Scale = Union[None, float, torch.Tensor]


def broadcast_rows(tokens: int, rows: torch.Tensor) -> torch.Tensor:
    """`rows` as one row per slot, as torch's `buffer[loc] = rows` pairs them: SGLang's pools
    write with plain indexing, so one row broadcasts over every slot (a narrowed forward whose
    swa_loc was not cut writes its one token into every padded SWA slot), and any other count
    that differs raises before a byte is written."""
    if rows.shape[0] == tokens:
        return rows
    if rows.shape[0] == 1:
        return rows.expand(tokens, *rows.shape[1:]).contiguous()
    raise IndexError(f"{tokens} slots for {rows.shape[0]} rows")


def same_rows(tokens: int, parts: Sequence[Optional[torch.Tensor]]) -> None:
    """The MLA nope ++ rope door broadcasts nothing: SGLang's set_mla_kv_buffer selects rows with
    a mask and raises IndexError on any count that differs from the slots, one row included."""
    for part in parts:
        if part is not None and part.shape[-1] != 0 and part.shape[0] != tokens:
            raise IndexError(f"{tokens} slots for {part.shape[0]} rows")


class StoreEngine(ABC):
    name: str = "abstract"
    # Devices the engine can run on; None means any torch device.
    devices: Optional[tuple[str, ...]] = None

    def prepare(
        self, values: torch.Tensor, scale: Scale, dtype: torch.dtype, store_dtype: torch.dtype
    ) -> torch.Tensor:
        """SGLang's MHA pre-store step: in-place divide (only when a cast is needed), cast, view."""
        if values.dtype != dtype:
            if scale is not None:
                values.div_(scale)
            values = values.to(dtype)
        if store_dtype != dtype:
            values = values.view(store_dtype)
        return values

    def cast(
        self, values: torch.Tensor, dtype: torch.dtype, store_dtype: torch.dtype
    ) -> torch.Tensor:
        """SGLang's MLA pre-store step: cast without any scale, view as storage dtype."""
        return self.prepare(values, None, dtype, store_dtype)

    @abstractmethod
    def scatter(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        """buffer[loc[i]] = rows[i] for every token i (whole rows)."""

    @abstractmethod
    def scatter_columns(
        self, buffer: torch.Tensor, loc: torch.Tensor, parts: Sequence[Optional[torch.Tensor]]
    ) -> None:
        """Write the concatenation of `parts` along the last dim into rows `loc` (MLA nope+rope).

        A part that is None or zero wide contributes nothing.
        """

    def scatter_layout(
        self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, layout: "Layout"
    ) -> None:
        """Write each token's row where `layout` puts its slot (HND, aiter 5-D): one token at a
        time, the last writer of a slot wins. Engines override this with a vectorised write."""
        shaped = layout.rows(broadcast_rows(loc.shape[0], rows))
        check_slots(loc, layout.slots(buffer))
        for token, slot in enumerate(loc.tolist()):
            buffer[layout.place(buffer, slot)] = shaped[token]

    def quantize_fp4(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """SGLang's FP4 block quantiser: (tokens, heads, dim) -> (packed, block scales)."""
        return fp4_reference.quantize(values)

    def store_kv(
        self,
        k_buffer: torch.Tensor,
        v_buffer: torch.Tensor,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        k_scale: Scale,
        v_scale: Scale,
        dtype: torch.dtype,
        store_dtype: torch.dtype,
    ) -> None:
        # Both divisions happen before either cast, as in SGLang; the order is observable
        # when k and v alias one storage (a fused qkv tensor).
        if cache_k.dtype != dtype:
            if k_scale is not None:
                cache_k.div_(k_scale)
            if v_scale is not None:
                cache_v.div_(v_scale)
        self.scatter(k_buffer, loc, self.prepare(cache_k, None, dtype, store_dtype))
        self.scatter(v_buffer, loc, self.prepare(cache_v, None, dtype, store_dtype))

    def store_rows(
        self,
        buffer: torch.Tensor,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        dtype: torch.dtype,
        store_dtype: torch.dtype,
    ) -> None:
        self.scatter(buffer, loc, self.cast(cache_k, dtype, store_dtype))

    def store_nope_rope(
        self,
        buffer: torch.Tensor,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        dtype: torch.dtype,
        store_dtype: torch.dtype,
    ) -> None:
        parts = [self.cast(k_nope, dtype, store_dtype)]
        if k_rope is not None and k_rope.numel() > 0:
            parts.append(self.cast(k_rope, dtype, store_dtype))
        self.scatter_columns(buffer, loc, parts)
