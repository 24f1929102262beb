"""The judge's MiniMaxM3Nvfp4KVPool, as SGLang 0.5.23's (mem_cache/minimax_m3_nvfp4_pool.py),
for its byte-copy doors: the already-quantised NVFP4 rows a caller hands are stored as they come.

- Both sub-pools keep, per layer, num_pages = ceil((size + 128) / 128) page rows of uint8 bytes.
  A row is its components one after another, each starting at a multiple of 128 bytes: the main
  pool's K payload (heads, 128 tokens, 64 bytes), K scales (heads, 128, 8), V payload, V scales;
  the index pool's K payload (128, 64) and K scales (128, 8). Token t of a loc is page t // 128,
  row t % 128 (torch's floor division: a negative id reaches a page from the end).
- set_quantized_kv_buffer(layer_id, loc, packed_k, packed_v, k_scales, v_scales): each input
  reshaped to (len(loc), heads, 64 or 8) and viewed as bytes, then K payload, V payload, K
  scales, V scales stored in that order, each a scatter over the loc's tokens (the last of a
  repeated slot wins); the layer is layer_id - start_layer, indexing a Python list.
- set_quantized_k_buffer(layer_id, loc, packed_k, block_scales): (-1, 64) and (-1, 8) bytes,
  ValueError unless both have len(loc) rows; payload then scales.
- No bounds check (no maybe_detect_oob): a page past the end raises IndexError from the
  scatter, after the tokens before it were stored (torch's serial CPU scatter).
- The composite refuses a dense layer and an index that keeps V (ValueError); every layer is
  sparse and its index K is the index pool's layer of its position among the sparse layers.

Its own byte arithmetic, per token and per head; it shares nothing with the builtin storage.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from pools.kinds.composite import MINIMAX_M3_NVFP4
from pools.kinds.pool_classes import judge_pool

PAGE, HEAD_DIM, GROUP, ALIGN = 128, 128, 16, 128
PAYLOAD, SCALES = HEAD_DIM // 2, HEAD_DIM // GROUP


def _aligned(size: int) -> int:
    return (size + ALIGN - 1) // ALIGN * ALIGN


class _JudgePageRows:
    """Per-layer page rows of `widths` components of `heads` heads each."""

    def __init__(
        self,
        size: int,
        heads: int,
        widths: tuple[int, ...],
        layer_num: int,
        start_layer: Optional[int],
        end_layer: Optional[int],
    ):
        self.size, self.page_size, self.head_num = size, PAGE, heads
        self.layer_num = layer_num
        self.start_layer = start_layer or 0
        self.end_layer = end_layer if end_layer is not None else self.start_layer + layer_num - 1
        self.num_pages = -(-(size + PAGE) // PAGE)
        self.offsets, offset = [], 0
        for width in widths:
            self.offsets.append(offset)
            offset += _aligned(heads * PAGE * width)
        self.row_bytes = offset
        self.rows = [
            torch.zeros((self.num_pages, self.row_bytes), dtype=torch.uint8)
            for _ in range(layer_num)
        ]

    def _store(
        self, layer_id: int, loc: torch.Tensor, component: int, width: int, values: torch.Tensor
    ) -> None:
        """Token i's (heads, width) bytes at its page row's component, token by token."""
        rows = self.rows[layer_id - self.start_layer]
        for token, slot in enumerate(loc.reshape(-1).tolist()):
            page, row = int(slot) // PAGE, int(slot) % PAGE
            if not -self.num_pages <= page < self.num_pages:
                raise IndexError(
                    f"index {page} is out of bounds for dimension 0 with size {self.num_pages}"
                )
            for head in range(self.head_num):
                start = self.offsets[component] + (head * PAGE + row) * width
                rows[page][start : start + width] = values[token, head]


class JudgeNvfp4MainPool(_JudgePageRows):
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
    ):
        if page_size != PAGE:
            raise ValueError(f"MSA-v1 NVFP4 main cache requires page_size=128, got {page_size}.")
        if head_dim != HEAD_DIM:
            raise ValueError(f"MSA-v1 NVFP4 main cache requires head_dim=128, got {head_dim}.")
        if head_num <= 0:
            raise ValueError("MSA-v1 NVFP4 main cache requires at least one KV head.")
        super().__init__(size, head_num, (PAYLOAD, SCALES, PAYLOAD, SCALES), layer_num,
                         start_layer, end_layer)  # fmt: skip
        self.dtype, self.source_dtype, self.device = torch.uint8, dtype, device

    def set_quantized_kv_buffer(
        self,
        layer_id: int,
        loc: torch.Tensor,
        packed_k: torch.Tensor,
        packed_v: torch.Tensor,
        k_scales: torch.Tensor,
        v_scales: torch.Tensor,
    ) -> None:
        tokens = loc.numel()
        payload, scales = (tokens, self.head_num, PAYLOAD), (tokens, self.head_num, SCALES)
        k, v = (t.reshape(payload).view(torch.uint8) for t in (packed_k, packed_v))
        ks, vs = (t.reshape(scales).view(torch.uint8) for t in (k_scales, v_scales))
        for component, width, values in (
            (0, PAYLOAD, k),
            (2, PAYLOAD, v),
            (1, SCALES, ks),
            (3, SCALES, vs),
        ):
            self._store(layer_id, loc, component, width, values)


class JudgeNvfp4IndexPool(_JudgePageRows):
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
    ):
        if page_size != PAGE:
            raise ValueError(f"MSA-v1 NVFP4 index cache requires page_size=128, got {page_size}.")
        if head_num != 1 or head_dim != HEAD_DIM:
            raise ValueError(
                "MSA-v1 NVFP4 index cache requires one 128-dimensional K head, "
                f"got head_num={head_num}, head_dim={head_dim}."
            )
        super().__init__(size, 1, (PAYLOAD, SCALES), layer_num, start_layer, end_layer)
        self.dtype, self.source_dtype, self.device = torch.uint8, dtype, device

    def set_quantized_k_buffer(
        self, layer_id: int, loc: torch.Tensor, packed_k: torch.Tensor, block_scales: torch.Tensor
    ) -> None:
        payload = packed_k.reshape(-1, PAYLOAD).view(torch.uint8)
        scales = block_scales.reshape(-1, SCALES).view(torch.uint8)
        if payload.shape[0] != loc.numel() or scales.shape[0] != loc.numel():
            raise ValueError(
                "MiniMax NVFP4 index cache write expects one packed K and scale row per location."
            )
        self._store(layer_id, loc, 0, PAYLOAD, payload[:, None])
        self._store(layer_id, loc, 1, SCALES, scales[:, None])


class JudgeM3Nvfp4Pool:
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
    ):
        if dense_layer_ids:
            raise ValueError("M3.1 NVFP4 requires sparse attention in every layer")
        if set(disable_value_sparse_layer_ids) != set(sparse_layer_ids):
            raise ValueError("M3.1 NVFP4 requires a K-only sparse index")
        end_layer = end_layer if end_layer is not None else len(sparse_layer_ids)
        local = [i for i in sparse_layer_ids if start_layer <= i < end_layer]
        self.index_k_layer_id_mapping = {layer: i for i, layer in enumerate(local)}
        self.start_layer, self.end_layer, self.page_size = start_layer, end_layer, page_size
        self.main_pool = JudgeNvfp4MainPool(
            size, page_size, dtype, head_num, head_dim, len(local), device,
            start_layer=start_layer, end_layer=end_layer,
        )  # fmt: skip
        self.index_k_pool = JudgeNvfp4IndexPool(
            size, page_size, dtype, 1, idx_head_dim, len(local), device
        )

    @property
    def kept_sinks(self) -> set[int]:
        return set()  # a byte copy by plain indexing keeps no reserved slot


@judge_pool(MINIMAX_M3_NVFP4)
def minimax_m3_nvfp4_judges(module) -> dict[str, type]:
    return {
        "MiniMaxM3Nvfp4KVPool": JudgeM3Nvfp4Pool,
        "MiniMaxM3Nvfp4MainKVPool": JudgeNvfp4MainPool,
        "MiniMaxM3Nvfp4IndexKPool": JudgeNvfp4IndexPool,
    }
