"""SGLang 0.5.23's FP4 KV quantiser, written one element at a time so that it is obviously right.

Modelled on `FP4MXBlock16KVQuantizeUtil.batched_quantize` (sglang/srt/layers/quantization/
kvfp4_tensor.py, 0.5.23), which MHATokenToKVPoolFP4 and MLATokenToKVPoolFP4
(mem_cache/memory_pool.py) call:
- a row (token) of (heads, dim) values is flattened and cut into blocks of 16 consecutive values;
- block scale: exponent-only (UE8M0-like, bias 127): e = ceil(log2(max(|block| / 6, 1e-10))),
  stored as the byte e + 127; values are divided by 2**e;
- e2m1 code: sign bit 8 when the scaled value is < 0 (so -0.0 keeps sign 0), magnitude = how many
  of the bounds (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0) are <= |x|: ties round away from zero,
  |x| >= 5 saturates at 6.0, NaN becomes +0;
- packing: byte j = code[2j] | code[2j + 1] << 4 (the even element in the low nibble).
Where SGLang computes log2 in floating point we take the exact ceil(log2) (frexp): they differ
only when |block max| / 6 lies within an ulp above a power of two, where SGLang's rounded log2
picks the smaller exponent and the extra magnitude saturates at 6.0. Arithmetic is fp32 (the
compiled function upcasts bf16 inputs).
"""

from __future__ import annotations

import array
import bisect
import functools
import math
import struct

import torch

BLOCK = 16
E2M1_MAX = 6.0
E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
SCALE_BIAS = 127
SCALE_FLOOR = 1e-10


def fp32(value: float) -> float:
    """`value` rounded to fp32 (to nearest, ties to even; past its range, inf), as torch's cast
    does: a C float cast through struct, without a tensor per value."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # struct refuses what the cast would round to inf
        return math.copysign(math.inf, value)


def block_exponent(block_max: float) -> int:
    """Exact ceil(log2(max(block_max / 6, 1e-10))), the division rounded as fp32."""
    ratio = max(fp32(block_max / E2M1_MAX), fp32(SCALE_FLOOR))
    if math.isinf(ratio) or math.isnan(ratio):
        raise ValueError(
            "FP4 block scale of a non-finite block is undefined (SGLang casts inf to uint8)"
        )
    mantissa, exponent = math.frexp(ratio)  # ratio = mantissa * 2**exponent, mantissa in [0.5, 1)
    return exponent - 1 if mantissa == 0.5 else exponent


def e2m1_code(value: float) -> int:
    """The sign bit, plus how many of the bounds are <= |value| (none for NaN)."""
    sign = 8 if value < 0 else 0
    magnitude = abs(value)
    if math.isnan(magnitude):
        return sign
    return sign + bisect.bisect_right(E2M1_BOUNDS, magnitude)


def quantize_row(values: list[float]) -> tuple[list[int], list[int]]:
    """One token's flattened values -> (packed bytes, scale bytes)."""
    codes, scales = [], []
    for start in range(0, len(values), BLOCK):
        block = values[start : start + BLOCK]
        exponent = block_exponent(max(abs(v) for v in block))
        scales.append(exponent + SCALE_BIAS)
        codes += [e2m1_code(fp32(v / 2.0**exponent)) for v in block]
    packed = [codes[i] | (codes[i + 1] << 4) for i in range(0, len(codes), 2)]
    return packed, scales


# Every era's pool and the baseline quantise the same rows of one scenario in turn: keyed by the
# row's fp32 bytes (so -0.0 and NaN payloads stay apart), a row is quantised once.
@functools.lru_cache(maxsize=4096)
def _quantize_fp32_row(row: bytes) -> tuple[list[int], list[int]]:
    return quantize_row(array.array("f", row).tolist())


def check_shape(values: torch.Tensor) -> None:
    if values.dim() != 3 or values.shape[-1] % 2 or (values.shape[1] * values.shape[2]) % BLOCK:
        raise ValueError(
            f"FP4 quantisation needs (tokens, heads, dim) with heads*dim a multiple of "
            f"{BLOCK} and an even dim; got {tuple(values.shape)}"
        )


def quantize(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens, heads, dim) -> packed (tokens, heads, dim // 2) uint8,
    scales (tokens, heads*dim // 16)."""
    check_shape(values)
    tokens, heads, dim = values.shape
    rows = values.detach().to("cpu", torch.float32).reshape(tokens, -1).numpy()
    quantized = [_quantize_fp32_row(row.tobytes()) for row in rows]
    packed, scales = zip(*quantized) if quantized else ((), ())
    packed_t = torch.tensor(packed, dtype=torch.uint8).reshape(tokens, heads, dim // 2)
    scales_t = torch.tensor(scales, dtype=torch.uint8).reshape(tokens, heads * dim // BLOCK)
    return packed_t.to(values.device), scales_t.to(values.device)


def dequantize(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The inverse of `quantize` (SGLang's batched_dequantize), in fp32, vectorised: it is used
    only by the error-bound oracle, never compared bytewise."""
    low, high = (packed & 0x0F).long(), (packed >> 4).long()
    codes = torch.stack([low, high], dim=-1).reshape(packed.shape[0], -1)
    magnitudes = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32)[codes & 7]
    values = torch.where(codes >= 8, -magnitudes, magnitudes)
    exponent = scales.to(torch.float32) - SCALE_BIAS
    return (
        values.reshape(packed.shape[0], -1, BLOCK) * torch.exp2(exponent).unsqueeze(-1)
    ).reshape(packed.shape[0], *packed.shape[1:-1], -1)


def error_bound(values: torch.Tensor) -> torch.Tensor:
    """Per-value bound on |dequantize(quantize(x)) - x|, flattened per token: half the e2m1 code
    gap around |x| / 2**e (0.25 below 2, 0.5 below 4, 1.0 up to 6), times the block scale 2**e.
    e is computed in float64, independently of every quantiser under test."""
    flat = values.detach().to("cpu", torch.float64).reshape(values.shape[0], -1, BLOCK)
    ratio = torch.clamp(
        flat.abs().amax(dim=-1, keepdim=True).to(torch.float32) / E2M1_MAX, min=fp32(SCALE_FLOOR)
    ).to(torch.float64)
    scale = torch.exp2(torch.ceil(torch.log2(ratio)))
    units = flat.abs() / scale
    half_gap = torch.where(units < 2, 0.25, torch.where(units < 4, 0.5, 1.0))
    return (half_gap * scale).reshape(values.shape[0], -1)
