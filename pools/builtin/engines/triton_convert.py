"""Triton device functions that reproduce torch's rounding bit for bit, on any device.

Values travel as raw bits (int32 / int16 / uint8 views), and every rounding step is integer
arithmetic that follows torch 2.13's c10 headers (BFloat16 round_to_nearest_even, the
Float8_e4m3fn and Float8_e5m2 from-fp32 conversions; e4m3fn saturates in 2.13), so the
interpreter (numpy) and a compiled GPU kernel give the same bytes as torch's casts. Only
fp32 -> fp16 uses a native cast: it is IEEE round-to-nearest-even on numpy and GPUs alike.
"""

from __future__ import annotations

import triton
import triton.language as tl

import pools.builtin.engines.triton_mode  # noqa: F401  (sets TRITON_INTERPRET before any kernel is decorated)

# Element kinds, shared with the engine (pools/builtin/engines/triton_engine.py).
FP32: tl.constexpr = 0
FP16: tl.constexpr = 1
BF16: tl.constexpr = 2
E4M3: tl.constexpr = 3
E5M2: tl.constexpr = 4
BYTE: tl.constexpr = 5

# How a scale applies; the engine picks one per device (pools/builtin/engines/triton_scale.py).
NO_SCALE: tl.constexpr = 0
DIVIDE: tl.constexpr = 1  # x / s, IEEE round-to-nearest in fp32
RECIPROCAL: tl.constexpr = 2  # x * (1 / s), with 1 / s precomputed in fp32 by the host


@triton.jit
def bits_to_f32(bits, KIND: tl.constexpr):
    if KIND == FP32:
        value = bits.to(tl.float32, bitcast=True)
    elif KIND == FP16:
        value = bits.to(tl.float16, bitcast=True).to(tl.float32)
    else:
        tl.static_assert(KIND == BF16, "only fp32, fp16 and bf16 inputs are converted")
        value = ((bits.to(tl.int32) & 0xFFFF) << 16).to(tl.float32, bitcast=True)
    return value


@triton.jit
def _bf16_bits(value):
    u = value.to(tl.uint32, bitcast=True)
    rounded = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16) & 0xFFFF
    rounded = tl.where(value != value, 0x7FC0, rounded)
    return rounded.to(tl.uint16).to(tl.int16, bitcast=True)


@triton.jit
def _fp8_bits(
    value,
    MANTISSA: tl.constexpr,
    BIAS: tl.constexpr,
    MAX_BITS: tl.constexpr,
    NORMAL_MIN: tl.constexpr,
    DENORM_FLOAT: tl.constexpr,
    DENORM_BITS: tl.constexpr,
    OVERFLOW_BITS: tl.constexpr,
    NO_INFINITY: tl.constexpr,
):
    u = value.to(tl.uint32, bitcast=True)
    negative = (u >> 31).to(tl.int32)
    magnitude = (u & 0x7FFFFFFF).to(tl.int32)
    # Below the smallest normal: one fp32 add rounds to the fp8 subnormal grid (c10's trick).
    grid = magnitude.to(tl.float32, bitcast=True) + DENORM_FLOAT
    subnormal = grid.to(tl.int32, bitcast=True) - DENORM_BITS
    odd = (magnitude >> (23 - MANTISSA)) & 1
    normal = (magnitude - ((127 - BIAS) << 23) + ((1 << (22 - MANTISSA)) - 1) + odd) >> (
        23 - MANTISSA
    )
    if NO_INFINITY:
        # Rounding up into the NaN pattern saturates to the largest finite value instead.
        normal = tl.where(normal == 0x7F, 0x7E, normal)
    overflow = tl.where(magnitude > 0x7F800000, 0x7F, OVERFLOW_BITS)  # NaN stays NaN
    bits = tl.where(
        magnitude >= MAX_BITS, overflow, tl.where(magnitude < NORMAL_MIN, subnormal, normal)
    )
    return ((bits & 0xFF) | (negative << 7)).to(tl.uint8)


@triton.jit
def f32_to_bits(value, KIND: tl.constexpr):
    """fp32 values -> the bits of KIND, rounded exactly as torch's `.to(dtype)` rounds."""
    if KIND == FP32:
        bits = value.to(tl.int32, bitcast=True)
    elif KIND == FP16:
        bits = value.to(tl.float16).to(tl.int16, bitcast=True)
    elif KIND == BF16:
        bits = _bf16_bits(value)
    elif KIND == E4M3:
        # torch 2.13 saturates: >= 464 and inf become 448 (0x7E); e4m3fn has no infinity.
        bits = _fp8_bits(value, 3, 7, 1087 << 20, 121 << 23, 16384.0, 141 << 23, 0x7E, True)
    else:
        tl.static_assert(KIND == E5M2, "unknown output kind")
        # >= 61440 rounds to, and >= 65536 (143 << 23) becomes, inf (0x7C): no saturation.
        bits = _fp8_bits(value, 2, 15, 143 << 23, 113 << 23, 128.0, 134 << 23, 0x7C, False)
    return bits


@triton.jit
def apply_scale(value, scale, SCALE: tl.constexpr):
    if SCALE == DIVIDE:
        value = tl.math.div_rn(value, scale)
    elif SCALE == RECIPROCAL:
        value = value * scale
    return value
