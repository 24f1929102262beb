"""The judge's own FP4 (e2m1) quantiser: SGLang 0.5.23's MX-style block-16 rule, in NumPy fp32.

Per token, the flattened (heads, dim) values are cut into blocks of 16. A block's scale is the
exponent e = ceil(log2(max(amax / 6, 1e-10))), taken exactly from frexp (the fp32 ratio m * 2**E
with m in [0.5, 1) has ceil(log2) E, or E - 1 when m is exactly 0.5), stored as the byte e + 127.
Each value is divided by 2**e (exact in fp32, rounded only if it falls subnormal) and coded by how
many of the e2m1 rounding bounds its magnitude reaches (ties away from zero, saturating at 6),
with the sign bit 8 for negative values (-0.0 codes as +0). Two codes a byte, the even element in
the low nibble. A block whose amax is not finite (inf or NaN) has no defined scale: ValueError.
"""

from __future__ import annotations

import numpy as np
import torch

from pools.judge.casts import bits_of, widen

BLOCK = 16
SCALE_BIAS = 127
_BOUNDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=np.float32)
_FLOOR = np.float32(1e-10)
_E2M1_MAX = np.float32(6.0)


def check_shape(values: torch.Tensor) -> None:
    if values.dim() != 3 or values.shape[-1] % 2 or (values.shape[1] * values.shape[2]) % BLOCK:
        raise ValueError(
            f"FP4 quantisation needs (tokens, heads, dim) with heads*dim a multiple of "
            f"{BLOCK} and an even dim; got {tuple(values.shape)}"
        )


def quantize(values: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, heads, dim) -> packed (tokens, heads, dim // 2) and
    scales (tokens, heads*dim // 16), both uint8 arrays."""
    check_shape(values)
    tokens, heads, dim = values.shape
    blocks = widen(bits_of(values), values.dtype).reshape(tokens, -1, BLOCK)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        ratio = np.maximum(
            np.abs(blocks).max(axis=-1, keepdims=True, initial=0.0) / _E2M1_MAX, _FLOOR
        )
    if not np.isfinite(ratio).all():
        raise ValueError(
            "FP4 block scale of a non-finite block is undefined (SGLang casts inf to uint8)"
        )
    mantissa, exponent = np.frexp(ratio)
    exponent = np.where(mantissa == 0.5, exponent - 1, exponent)
    with np.errstate(under="ignore"):
        scaled = blocks / np.exp2(exponent).astype(np.float32)
    magnitude = (np.abs(scaled)[..., None] >= _BOUNDS).sum(axis=-1)
    codes = (magnitude + np.where(scaled < 0, 8, 0)).astype(np.uint8).reshape(tokens, heads, dim)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    scales = (exponent + SCALE_BIAS).astype(np.uint8).reshape(tokens, -1)
    return packed, scales
