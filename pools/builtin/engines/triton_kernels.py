"""The Triton store kernels: one fused kernel for every row scatter the pools make.

`store_pair_kernel` writes two parts per token: K and V of an MHA layer, nope and rope of an MLA
row, or one part (the second 0 wide) for an MLA row store or a plain scatter. Each part may
divide the caller's tensor in place by a scale first (written back in the input dtype, as
`div_` does), then casts to the pool dtype and scatters. A part's destination row is
`(slot // page_size) * stride_page + (slot % page_size) * stride_in_page`: token-major (NHD)
pools pass page_size 1, page-major (HND) pools their page geometry.

The small helpers (`load_slots`, `column_mask`, `slot_offsets`) are separate on purpose: a test
fixture swaps one of them for a faulty copy to prove the harness catches that fault.
"""

from __future__ import annotations

import triton
import triton.language as tl

import pools.builtin.engines.triton_mode  # noqa: F401  (sets TRITON_INTERPRET before any kernel is decorated)
from pools.builtin.engines.triton_convert import NO_SCALE, apply_scale, bits_to_f32, f32_to_bits


@triton.jit
def load_slots(loc_ptr, tokens, token_mask):
    # int32 and int64 locs both widen to int64 before any address arithmetic.
    return tl.load(loc_ptr + tokens, mask=token_mask, other=0).to(tl.int64)


@triton.jit
def column_mask(columns, dim, BLOCK_D: tl.constexpr):
    return columns < dim


@triton.jit
def slot_offsets(slots, page_size, stride_page, stride_in_page):
    return (slots // page_size) * stride_page + (slots % page_size) * stride_in_page


@triton.jit
def _store_part(
    slots,
    valid,
    tokens,
    token_mask,
    head,
    page_size,
    src,
    src_t,
    src_h,
    src_d,
    dst,
    dst_page,
    dst_in_page,
    dst_h,
    dst_d,
    dim,
    scale,
    IN: tl.constexpr,
    OUT: tl.constexpr,
    SCALE: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    src_rows = src + tokens[:, None] * src_t + head * src_h
    dst_rows = dst + slot_offsets(slots, page_size, dst_page, dst_in_page)[:, None] + head * dst_h
    for start in range(0, dim, BLOCK_D):
        columns = start + tl.arange(0, BLOCK_D)
        mask = token_mask[:, None] & column_mask(columns, dim, BLOCK_D)[None, :]
        src_ptrs = src_rows + columns[None, :] * src_d
        bits = tl.load(src_ptrs, mask=mask, other=0)
        if SCALE == NO_SCALE:
            if IN == OUT:
                out = bits
            else:
                out = f32_to_bits(bits_to_f32(bits, IN), OUT)
        else:
            # The caller's tensor is divided in place in its
            # own dtype, then cast (SGLang's MHA pool).
            rounded = f32_to_bits(apply_scale(bits_to_f32(bits, IN), scale, SCALE), IN)
            tl.store(src_ptrs, rounded, mask=mask)
            out = f32_to_bits(bits_to_f32(rounded, IN), OUT)
        tl.store(dst_rows + columns[None, :] * dst_d, out, mask=mask & valid[:, None])


@triton.jit
def store_pair_kernel(
    loc_ptr,
    token_count,
    slot_limit,
    page_size,
    a_src,
    a_src_t,
    a_src_h,
    a_src_d,
    a_dst,
    a_dst_page,
    a_dst_in_page,
    a_dst_h,
    a_dst_d,
    a_dim,
    a_scale,
    b_src,
    b_src_t,
    b_src_h,
    b_src_d,
    b_dst,
    b_dst_page,
    b_dst_in_page,
    b_dst_h,
    b_dst_d,
    b_dim,
    b_scale,
    A_IN: tl.constexpr,
    A_OUT: tl.constexpr,
    A_SCALE: tl.constexpr,
    B_IN: tl.constexpr,
    B_OUT: tl.constexpr,
    B_SCALE: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tokens = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    token_mask = tokens < token_count
    head = tl.program_id(1).to(tl.int64)
    slots = load_slots(loc_ptr, tokens, token_mask)
    # The host has already raised for out-of-range slots; this guard keeps a stray one from
    # ever writing outside the buffer. slot_limit 0 makes a divide-only pass.
    valid = token_mask & (slots >= 0) & (slots < slot_limit)
    _store_part(
        slots,
        valid,
        tokens,
        token_mask,
        head,
        page_size,
        a_src,
        a_src_t,
        a_src_h,
        a_src_d,
        a_dst,
        a_dst_page,
        a_dst_in_page,
        a_dst_h,
        a_dst_d,
        a_dim,
        a_scale,
        A_IN,
        A_OUT,
        A_SCALE,
        BLOCK_D,
    )
    _store_part(
        slots,
        valid,
        tokens,
        token_mask,
        head,
        page_size,
        b_src,
        b_src_t,
        b_src_h,
        b_src_d,
        b_dst,
        b_dst_page,
        b_dst_in_page,
        b_dst_h,
        b_dst_d,
        b_dim,
        b_scale,
        B_IN,
        B_OUT,
        B_SCALE,
        BLOCK_D,
    )
