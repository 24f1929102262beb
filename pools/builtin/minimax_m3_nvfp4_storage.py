"""The builtin MiniMaxM3Nvfp4KVPool (SGLang 0.5.23 mem_cache/minimax_m3_nvfp4_pool.py), for its
byte-copy doors: the main K/V and the one-head index K of every (sparse) layer, NVFP4-packed in
page rows.

Each sub-pool keeps one [layers, pages, row_bytes] uint8 slab (`rows` are its per-layer
slices); a page row holds its components at 128-byte aligned offsets, each laid out (heads,
128 tokens, width). A door hands each component to the store engine as a page-major (HND) view
into the slab whose page stride is the row width, one scatter_layout per component, in
SGLang's order. Refusals are SGLang's: the constructors' ValueErrors, the index door's row
count, IndexError for a page past the end; a negative id wraps as SGLang's floor division does.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.builtin.engines.base import StoreEngine
from pools.builtin.layouts.paged import HND_LAYOUT
from pools.kinds.composite import MINIMAX_M3_NVFP4
from pools.kinds.pool_classes import builtin_pool

MSA_PAGE, MSA_HEAD_DIM, SCALE_GROUP, ROW_ALIGN = 128, 128, 16, 128
PAYLOAD_BYTES, SCALE_BYTES = MSA_HEAD_DIM // 2, MSA_HEAD_DIM // SCALE_GROUP


class PageRowStorage:
    """One slab of page rows whose components are (heads, page, width) byte blocks."""

    engine: StoreEngine  # bound by pools/builtin/sut.py (and by the engine-fault fixtures)

    def __init__(
        self,
        size: int,
        heads: int,
        widths: tuple[int, ...],
        layer_num: int,
        device: str,
        start_layer: Optional[int],
    ) -> None:
        self.size, self.page_size, self.head_num, self.device = size, MSA_PAGE, heads, device
        self.layer_num, self.start_layer = layer_num, start_layer or 0
        self.end_layer = self.start_layer + layer_num - 1
        self.num_pages = (size + 2 * MSA_PAGE - 1) // MSA_PAGE
        self.widths = widths
        blocks = [heads * MSA_PAGE * width for width in widths]
        aligned = [-(-block // ROW_ALIGN) * ROW_ALIGN for block in blocks]
        self.component_starts = [sum(aligned[:i]) for i in range(len(widths))]
        self.row_bytes = sum(aligned)
        self.slab = torch.zeros(
            (layer_num, self.num_pages, self.row_bytes), dtype=torch.uint8, device=device
        )
        self.rows = list(self.slab.unbind(0))

    def component_view(self, layer_id: int, component: int) -> torch.Tensor:
        """A layer's component as a page-major (pages, heads, page, width) view into the slab,
        its page stride the row width."""
        start, width = self.component_starts[component], self.widths[component]
        block = self.rows[layer_id - self.start_layer][
            :, start : start + self.head_num * MSA_PAGE * width
        ]
        return block.view(self.num_pages, self.head_num, MSA_PAGE, width)

    def _scatter(
        self, layer_id: int, loc: torch.Tensor, component: int, values: torch.Tensor
    ) -> None:
        """values: (tokens, heads, width) bytes, stored at the loc's slots of one component. A
        negative id is the slot that many from the end, as SGLang's floor-divided page is."""
        slots, total = loc.reshape(-1).long(), self.num_pages * MSA_PAGE
        if slots.numel() and (int(slots.min()) < -total or int(slots.max()) >= total):
            raise IndexError(f"slot out of range [-{total}, {total}) for the page rows")
        slots = torch.where(slots < 0, slots + total, slots)
        self.engine.scatter_layout(
            self.component_view(layer_id, component), slots, values, HND_LAYOUT
        )


class Nvfp4MainStorage(PageRowStorage):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
    ) -> None:
        if page_size != MSA_PAGE:
            raise ValueError(f"MSA-v1 NVFP4 main cache requires page_size=128, got {page_size}.")
        if head_dim != MSA_HEAD_DIM:
            raise ValueError(f"MSA-v1 NVFP4 main cache requires head_dim=128, got {head_dim}.")
        if head_num <= 0:
            raise ValueError("MSA-v1 NVFP4 main cache requires at least one KV head.")
        widths = (PAYLOAD_BYTES, SCALE_BYTES, PAYLOAD_BYTES, SCALE_BYTES)
        super().__init__(size, head_num, widths, layer_num, device, start_layer)
        self.source_dtype = dtype

    def set_quantized_kv_buffer(
        self,
        layer_id: int,
        loc: torch.Tensor,
        packed_k: torch.Tensor,
        packed_v: torch.Tensor,
        k_scales: torch.Tensor,
        v_scales: torch.Tensor,
    ) -> None:
        n = loc.numel()
        payload_shape, scale_shape = (
            (n, self.head_num, PAYLOAD_BYTES),
            (n, self.head_num, SCALE_BYTES),
        )
        # SGLang's order: K payload, V payload, K scales, V scales.
        for component, shape, values in (
            (0, payload_shape, packed_k),
            (2, payload_shape, packed_v),
            (1, scale_shape, k_scales),
            (3, scale_shape, v_scales),
        ):
            self._scatter(layer_id, loc, component, values.reshape(shape).view(torch.uint8))


class Nvfp4IndexStorage(PageRowStorage):
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        start_layer: Optional[int] = None,
        end_layer: Optional[int] = None,
    ) -> None:
        if page_size != MSA_PAGE:
            raise ValueError(f"MSA-v1 NVFP4 index cache requires page_size=128, got {page_size}.")
        if head_num != 1 or head_dim != MSA_HEAD_DIM:
            raise ValueError(
                "MSA-v1 NVFP4 index cache requires one 128-dimensional K head, "
                f"got head_num={head_num}, head_dim={head_dim}."
            )
        super().__init__(size, 1, (PAYLOAD_BYTES, SCALE_BYTES), layer_num, device, start_layer)
        self.source_dtype = dtype

    def set_quantized_k_buffer(
        self, layer_id: int, loc: torch.Tensor, packed_k: torch.Tensor, block_scales: torch.Tensor
    ) -> None:
        payload = packed_k.reshape(-1, PAYLOAD_BYTES).view(torch.uint8)
        scales = block_scales.reshape(-1, SCALE_BYTES).view(torch.uint8)
        if payload.shape[0] != loc.numel() or scales.shape[0] != loc.numel():
            raise ValueError(
                "MiniMax NVFP4 index cache write expects one packed K and scale row per location."
            )
        self._scatter(layer_id, loc, 0, payload[:, None, :])
        self._scatter(layer_id, loc, 1, scales[:, None, :])


class M3Nvfp4Storage:
    """MiniMaxM3Nvfp4KVPool: all layers sparse, each one's index K in the K-only index pool."""

    # Nvfp4MainStorage and Nvfp4IndexStorage with an engine (pools/builtin/sut.py)
    main_pool_class: type
    index_pool_class: type

    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: torch.dtype,
        head_num: int,
        head_dim: int,
        idx_head_dim: int,
        dense_layer_ids: list[int],
        sparse_layer_ids: list[int],
        device: str,
        disable_value_sparse_layer_ids: list[int],
        enable_memory_saver: bool = False,
        start_layer: int = 0,
        end_layer: Optional[int] = None,
        **_ignored: Any,
    ) -> None:
        if dense_layer_ids:
            raise ValueError("M3.1 NVFP4 requires sparse attention in every layer")
        if set(disable_value_sparse_layer_ids) != set(sparse_layer_ids):
            raise ValueError("M3.1 NVFP4 requires a K-only sparse index")
        last = end_layer if end_layer is not None else len(sparse_layer_ids)
        owned = [layer for layer in sparse_layer_ids if start_layer <= layer < last]
        self.start_layer, self.end_layer, self.page_size = start_layer, last, page_size
        self.index_k_layer_id_mapping = {layer: i for i, layer in enumerate(owned)}
        self.main_pool = self.main_pool_class(
            size, page_size, dtype, head_num, head_dim, len(owned), device, start_layer=start_layer
        )
        self.index_k_pool = self.index_pool_class(
            size, page_size, dtype, 1, idx_head_dim, len(owned), device
        )


def m3_nvfp4_pools(engine: StoreEngine) -> dict[str, type]:
    """MiniMaxM3Nvfp4KVPool and its two sub-pools, storing through `engine`."""
    main = type("MiniMaxM3Nvfp4MainKVPool", (Nvfp4MainStorage,), {"engine": engine})
    index = type("MiniMaxM3Nvfp4IndexKPool", (Nvfp4IndexStorage,), {"engine": engine})
    composite = type(
        "MiniMaxM3Nvfp4KVPool",
        (M3Nvfp4Storage,),
        {"main_pool_class": main, "index_pool_class": index},
    )
    return {c.__name__: c for c in (composite, main, index)}


@builtin_pool(MINIMAX_M3_NVFP4)
def minimax_m3_nvfp4_pools(module: Any) -> dict[str, type]:
    return m3_nvfp4_pools(module.store_engine)
