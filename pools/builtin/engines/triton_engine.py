"""The Triton engine: the host side of pools/builtin/engines/triton_kernels.py.

It checks what torch's indexing would check (loc dtype and range, broadcastable shapes), resolves
each scale to the operand torch's `div_` would use on this device
(pools/builtin/engines/triton_scale.py), and launches one fused kernel per write. Kernels are
compiled on a GPU and interpreted on CPU (pools/builtin/engines/triton_mode.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import Optional, Sequence

import torch
import triton
from triton.runtime.interpreter import InterpretedFunction

from pools.builtin.engines import triton_kernels
from pools.builtin.engines.base import Scale, StoreEngine, same_rows
from pools.builtin.engines.triton_convert import (
    BF16,
    BYTE,
    DIVIDE,
    E4M3,
    E5M2,
    FP16,
    FP32,
    NO_SCALE,
    RECIPROCAL,
)
from pools.builtin.engines.triton_scale import scale_operand

# dtype -> (kernel element kind, the integer view the kernel moves its bits through)
KINDS: dict[torch.dtype, tuple[int, torch.dtype]] = {
    torch.float32: (FP32, torch.int32),
    torch.float16: (FP16, torch.int16),
    torch.bfloat16: (BF16, torch.int16),
    torch.float8_e4m3fn: (E4M3, torch.uint8),
    torch.float8_e5m2: (E5M2, torch.uint8),
    torch.uint8: (BYTE, torch.uint8),
}
ARITHMETIC_KINDS = (FP32, FP16, BF16)
SCALE_MODES = {"none": NO_SCALE, "divide": DIVIDE, "reciprocal": RECIPROCAL}


@dataclass(frozen=True)
class Part:
    """One tensor to scatter: `src` (tokens, heads, dim) into `dst` rows, as bit views."""

    src: torch.Tensor
    dst: torch.Tensor
    dst_page: int  # stride of a page (a row when page_size is 1)
    dst_in_page: int  # stride of a slot inside a page (0 for token-major buffers)
    dst_h: int
    dst_d: int
    in_kind: int
    out_kind: int
    scale_mode: int = NO_SCALE
    scale: float = 1.0
    original: Optional[torch.Tensor] = None  # src before broadcasting a row, for a divide-only pass

    @property
    def args(self) -> tuple:
        s = self.src
        return (
            s,
            s.stride(0),
            s.stride(1),
            s.stride(2),
            self.dst,
            self.dst_page,
            self.dst_in_page,
            self.dst_h,
            self.dst_d,
            s.shape[2],
            self.scale,
        )

    def empty(self) -> "Part":
        """A 0-wide stand-in for the second part of a single-part write."""
        return replace(self, src=self.src[..., :0], scale_mode=NO_SCALE, in_kind=self.out_kind)


def _kind(dtype: torch.dtype) -> tuple[int, torch.dtype]:
    if dtype not in KINDS:
        raise NotImplementedError(f"the triton engine has no kernel for dtype {dtype}")
    return KINDS[dtype]


def _as_3d(tensor: torch.Tensor) -> torch.Tensor:
    while tensor.dim() < 3:
        tensor = tensor.unsqueeze(1 if tensor.dim() == 2 else 0)
    if tensor.dim() != 3:
        raise NotImplementedError(
            f"the triton engine writes (tokens, heads, dim) rows, not {tuple(tensor.shape)}"
        )
    return tensor


def _span(tensor: torch.Tensor) -> tuple[int, int]:
    extent = sum((size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride()))
    return tensor.data_ptr(), tensor.data_ptr() + (extent + 1) * tensor.element_size()


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _validated_loc(loc: torch.Tensor, limit: int) -> torch.Tensor:
    """torch's index checks and negative wrap, before any byte moves; duplicate slots keep only
    their last token (the reference writes token by token), the others become -1, which the
    kernel's guard skips while still dividing their values in place."""
    if loc.dtype not in (torch.int32, torch.int64) or loc.dim() != 1:
        raise NotImplementedError(
            f"the triton engine takes 1-D int32/int64 locs, not {loc.dtype} {tuple(loc.shape)}"
        )
    if loc.numel() == 0:
        return loc
    low, high = int(loc.min()), int(loc.max())
    for bad in (low, high):
        if not -limit <= bad < limit:
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {limit}")
    if low < 0:
        loc = torch.where(loc < 0, loc.long() + limit, loc.long())
    if loc.numel() > 1:
        ordered, order = torch.sort(loc, stable=True)
        superseded = ordered[:-1] == ordered[1:]
        if bool(superseded.any()):
            loc = loc.long().clone()
            loc[order[:-1][superseded]] = -1
    return loc.contiguous()


class TritonEngine(StoreEngine):
    name = "triton"
    devices = ("cpu", "cuda")

    def __init__(self, kernels: ModuleType = triton_kernels):
        # A test fixture passes a module-like namespace with a planted fault.
        self.kernels = kernels

    @property
    def interpreted(self) -> bool:
        return isinstance(self.kernels.store_pair_kernel, InterpretedFunction)

    # ---- building parts -------------------------------------------------------------------
    def _part(
        self,
        values: torch.Tensor,
        buffer: torch.Tensor,
        tokens: int,
        scale: Scale,
        out_dtype: torch.dtype,
        paged: bool = False,
    ) -> Part:
        out_kind, out_view = _kind(out_dtype)
        in_kind, in_view = _kind(values.dtype)
        mode, operand = scale_operand(scale, values)
        if (mode != "none" or in_kind != out_kind) and in_kind not in ARITHMETIC_KINDS:
            raise NotImplementedError(f"the triton engine does not convert from {values.dtype}")
        overlapping = any(
            stride == 0 and size > 1 for size, stride in zip(values.shape, values.stride())
        )
        if mode != "none" and overlapping:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location (torch's div_ refuses it too)"
            )
        if not paged:
            dst = _as_3d(buffer.view(out_view))
            page, in_page, target = dst.stride(0), 0, (tokens, *dst.shape[1:])
        else:  # page-major: (pages, heads, page_size, dim)
            dst = buffer.view(out_view)
            page, in_page, target = (
                dst.stride(0),
                dst.stride(2),
                (tokens, dst.shape[1], dst.shape[3]),
            )
        if values.dim() == 0 or values.shape[0] not in (tokens, 1):
            # As torch's buffer[loc] = rows: one row per slot, or one row broadcast over all.
            raise IndexError(f"{tokens} slots for {values.shape[0] if values.dim() else 0} rows")
        src = values.view(in_view)
        expanded = src.expand(target) if src.shape != target else src
        return Part(
            expanded,
            dst,
            page,
            in_page,
            dst.stride(1),
            dst.stride(-1),
            in_kind,
            out_kind,
            SCALE_MODES[mode],
            operand,
            original=_as_3d(src) if expanded is not src else None,
        )

    # ---- the StoreEngine interface ----------------------------------------------------------
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
        divide = cache_k.dtype != dtype  # SGLang divides only when a cast is needed
        tokens = loc.shape[0]
        k = self._part(cache_k, k_buffer, tokens, k_scale if divide else None, dtype)
        v = self._part(cache_v, v_buffer, tokens, v_scale if divide else None, dtype)
        self.launch(loc, k_buffer.shape[0], 1, k, v)

    def store_rows(
        self,
        buffer: torch.Tensor,
        loc: torch.Tensor,
        cache_k: torch.Tensor,
        dtype: torch.dtype,
        store_dtype: torch.dtype,
    ) -> None:
        self.launch(loc, buffer.shape[0], 1, self._part(cache_k, buffer, loc.shape[0], None, dtype))

    def store_nope_rope(
        self,
        buffer: torch.Tensor,
        loc: torch.Tensor,
        k_nope: torch.Tensor,
        k_rope: Optional[torch.Tensor],
        dtype: torch.dtype,
        store_dtype: torch.dtype,
    ) -> None:
        self._columns(buffer, loc, [k_nope, k_rope], dtype)

    def scatter(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        self.launch(
            loc, buffer.shape[0], 1, self._part(rows, buffer, loc.shape[0], None, buffer.dtype)
        )

    def scatter_columns(
        self, buffer: torch.Tensor, loc: torch.Tensor, parts: Sequence[Optional[torch.Tensor]]
    ) -> None:
        self._columns(buffer, loc, parts, buffer.dtype)

    def scatter_hnd(self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor) -> None:
        """Page-major scatter:
        buffer (pages, heads, page_size, dim)[loc // P, :, loc % P] = rows."""
        page_size = buffer.shape[2]
        part = self._part(rows, buffer, loc.shape[0], None, buffer.dtype, paged=True)
        self.launch(loc, buffer.shape[0] * page_size, page_size, part)

    def scatter_layout(
        self, buffer: torch.Tensor, loc: torch.Tensor, rows: torch.Tensor, layout
    ) -> None:
        if layout.name == "hnd":
            self.scatter_hnd(buffer, loc, rows)
        else:  # no kernel for the other layouts yet (harness/plan/engine_matrix.py says so)
            super().scatter_layout(buffer, loc, rows, layout)

    def _columns(
        self,
        buffer: torch.Tensor,
        loc: torch.Tensor,
        values: Sequence[Optional[torch.Tensor]],
        dtype: torch.dtype,
    ) -> None:
        parts, column = [], 0
        same_rows(loc.shape[0], values)
        for tensor in values:
            if tensor is None or tensor.shape[-1] == 0:
                continue
            width = tensor.shape[-1]
            parts.append(
                self._part(tensor, buffer[..., column : column + width], loc.shape[0], None, dtype)
            )
            column += width
        for first in range(0, len(parts), 2):
            self.launch(loc, buffer.shape[0], 1, *parts[first : first + 2])

    # ---- launching ------------------------------------------------------------------------
    def launch(
        self, loc: torch.Tensor, slot_limit: int, page_size: int, a: Part, b: Optional[Part] = None
    ) -> None:
        if a.src.device.type == "cpu" and not self.interpreted:
            raise RuntimeError(
                "these Triton kernels were compiled for a GPU; CPU tensors need "
                "TRITON_INTERPRET=1 before pools.builtin.engines.triton_kernels is imported"
            )
        b = b if b is not None else a.empty()
        loc = _validated_loc(loc, slot_limit)
        if a.src.shape[1] != b.src.shape[1]:
            raise ValueError(f"parts have {a.src.shape[1]} and {b.src.shape[1]} heads")
        separate = a.original is not None or b.original is not None or _overlap(a.src, b.src)
        if separate and (a.scale_mode != NO_SCALE or b.scale_mode != NO_SCALE):
            # Broadcast or aliased inputs: divide each tensor once, in order (k, then v), as
            # torch does, then store without scales.
            a, b = self._divide_only(a), self._divide_only(b)
        self._run(loc, slot_limit, page_size, a, b)

    def _divide_only(self, part: Part) -> Part:
        if part.scale_mode == NO_SCALE:
            return part
        src = part.original if part.original is not None else part.src
        divided = replace(part, src=src, out_kind=part.in_kind)
        dummy_loc = torch.zeros(src.shape[0], dtype=torch.int64, device=src.device)
        self._run(dummy_loc, 0, 1, divided, divided.empty())  # slot_limit 0: no stores
        return replace(part, scale_mode=NO_SCALE)

    def _run(self, loc: torch.Tensor, slot_limit: int, page_size: int, a: Part, b: Part) -> None:
        tokens, heads = a.src.shape[0], a.src.shape[1]
        if tokens == 0 or heads == 0:
            return
        block_d = max(16, min(64, triton.next_power_of_2(max(a.src.shape[2], b.src.shape[2], 1))))
        # The interpreter pays per program, a GPU per register: few wide programs on CPU.
        block_t = min(triton.next_power_of_2(tokens), 256 if self.interpreted else 16)
        grid = (triton.cdiv(tokens, block_t), heads)
        self.kernels.store_pair_kernel[grid](
            loc,
            tokens,
            slot_limit,
            page_size,
            *a.args,
            *b.args,
            A_IN=a.in_kind,
            A_OUT=a.out_kind,
            A_SCALE=a.scale_mode,
            B_IN=b.in_kind,
            B_OUT=b.out_kind,
            B_SCALE=b.scale_mode,
            BLOCK_T=block_t,
            BLOCK_D=block_d,
        )
