"""The judge's own float casts, in NumPy bit arithmetic: never `torch.Tensor.to`.

Every cast widens the source exactly to fp32 first and rounds once from there, as torch 2.13's
CPU kernels do (they convert through float). Rules, each checked against torch by
tests/test_judge.py over all 65536 bf16 patterns and 10^5 fp32 values:
- bf16: round to nearest even on the fp32 bits (overflow reaches inf by the carry). A NaN becomes
  0xFFFF from fp32 (torch's vectorised kernel) and 0x7FC0 from fp16 (its scalar rule); torch's
  strided fp32 path gives 0x7FC0, so bf16 NaN payloads are compared as "both NaN".
- fp16: NumPy's correctly rounded `astype(np.float16)`; a NaN is quieted as torch does:
  sign | 0x7E00 | the top 9 payload bits (NumPy would keep a signalling NaN).
- fp8 e4m3fn and e5m2: the nearest of the format's 256 values (a table), ties to the even code.
  e4m3fn saturates: anything above 448, inf included, is ±448 (0x7E / 0xFE). e5m2 overflows to
  ±inf from 61440 (the midpoint of 57344 and 2**16) up. NaN is 0x7F with the input's sign bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

# torch dtype -> (NumPy dtype of its bit patterns, torch integer dtype of the same width)
_BITS: dict[torch.dtype, tuple[type, torch.dtype]] = {
    torch.float32: (np.uint32, torch.int32),
    torch.bfloat16: (np.uint16, torch.int16),
    torch.float16: (np.uint16, torch.int16),
    torch.float8_e4m3fn: (np.uint8, torch.uint8),
    torch.float8_e5m2: (np.uint8, torch.uint8),
    torch.uint8: (np.uint8, torch.uint8),
}
CASTABLE = (torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)


@dataclass(frozen=True)
class Fp8Format:
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool  # e5m2: exponent all ones is inf/NaN; e4m3fn: only 0x7F is NaN
    saturates: bool  # torch 2.13 CPU: e4m3fn clamps out-of-range values, e5m2 overflows


FP8_FORMATS = {
    torch.float8_e4m3fn: Fp8Format(4, 3, 7, has_inf=False, saturates=True),
    torch.float8_e5m2: Fp8Format(5, 2, 15, has_inf=True, saturates=False),
}


def bits_of(tensor: torch.Tensor) -> np.ndarray:
    """A copy of a CPU tensor's elements as unsigned bit patterns (any strides)."""
    np_bits, int_dtype = _bits_types(tensor.dtype)
    return tensor.detach().contiguous().view(int_dtype).numpy().view(np_bits).copy()


def bits_view(tensor: torch.Tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory as bit patterns: writes go through to the tensor."""
    np_bits, int_dtype = _bits_types(tensor.dtype)
    return tensor.detach().view(int_dtype).numpy().view(np_bits)


def tensor_from_bits(bits: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """The tensor of `dtype` whose elements have these bit patterns (a fresh CPU tensor)."""
    _, int_dtype = _bits_types(dtype)
    signed = {np.uint32: np.int32, np.uint16: np.int16, np.uint8: np.uint8}[bits.dtype.type]
    return (
        torch.from_numpy(np.ascontiguousarray(bits).view(signed).copy()).view(int_dtype).view(dtype)
    )


def _bits_types(dtype: torch.dtype) -> tuple[type, torch.dtype]:
    try:
        return _BITS[dtype]
    except KeyError:
        raise TypeError(f"the judge handles {', '.join(map(str, _BITS))}; got {dtype}") from None


# ----- widening: exact, to fp32 ---------------------------------------------------------------


def widen(bits: np.ndarray, source: torch.dtype) -> np.ndarray:
    """Bit patterns of `source` -> exact fp32 values."""
    if source == torch.float32:
        return bits.astype(np.uint32).view(np.float32)
    if source == torch.bfloat16:
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if source == torch.float16:
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    if source in FP8_FORMATS:
        return _fp8_table(source)[bits.astype(np.intp)].astype(np.float32)
    raise TypeError(f"the judge casts from {', '.join(map(str, CASTABLE))}; got {source}")


# ----- narrowing: one rounding from fp32 ------------------------------------------------------


def to_bf16(values: np.ndarray, nan_bits: int = 0xFFFF) -> np.ndarray:
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return np.where(np.isnan(values), nan_bits, rounded).astype(np.uint16)


def to_fp16(values: np.ndarray) -> np.ndarray:
    values = values.astype(np.float32)
    with np.errstate(over="ignore"):
        bits = values.astype(np.float16).view(np.uint16)
    raw = values.view(np.uint32)
    quiet = ((raw >> 16) & 0x8000) | 0x7E00 | ((raw >> 13) & 0x03FF)
    return np.where(np.isnan(values), quiet, bits).astype(np.uint16)


def to_fp8(values: np.ndarray, target: torch.dtype) -> np.ndarray:
    fmt = FP8_FORMATS[target]
    magnitudes = _finite_magnitudes(target)  # codes 0..top, ascending
    top = len(magnitudes) - 1
    with np.errstate(invalid="ignore"):  # a signalling NaN widens quietly
        wide = values.astype(np.float64)
    sign = np.where(np.signbit(wide), 0x80, 0x00)
    size = np.abs(wide)
    above = np.clip(np.searchsorted(magnitudes, size, side="left"), 0, top)
    below = np.clip(above - 1, 0, top)
    up_gap, down_gap = magnitudes[above] - size, size - magnitudes[below]
    take_up = (up_gap < down_gap) | ((up_gap == down_gap) & (above % 2 == 0))
    code = np.where(take_up, above, below)
    if fmt.saturates:
        code = np.where(size > magnitudes[top], top, code)
    else:
        # Past the top value, round as if the next binade existed: its first value is inf.
        step = magnitudes[top] - magnitudes[top - 1]
        overflow = size >= magnitudes[top] + step / 2
        code = np.where(overflow, _inf_code(target), code)
    code = np.where(np.isnan(wide), 0x7F, code)
    return (code | sign).astype(np.uint8)


def cast_bits(bits: np.ndarray, source: torch.dtype, target: torch.dtype) -> np.ndarray:
    """Bit patterns of `source` -> bit patterns of `target`, as torch's `.to(target)` on CPU."""
    if source == target:
        return bits.copy()
    values = widen(bits, source)
    if target == torch.float32:
        return values.view(np.uint32).copy()
    if target == torch.bfloat16:
        return to_bf16(values, nan_bits=0x7FC0 if source == torch.float16 else 0xFFFF)
    if target == torch.float16:
        return to_fp16(values)
    if target in FP8_FORMATS:
        if source in (torch.bfloat16, torch.float16):  # the common case: one look-up per value
            return _sixteen_bit_to_fp8(source, target)[bits.astype(np.intp)]
        return to_fp8(values, target)
    raise TypeError(f"the judge casts to {', '.join(map(str, CASTABLE))}; got {target}")


def cast(values: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    """`values.to(target)` on CPU, computed by the judge's own casts."""
    return tensor_from_bits(cast_bits(bits_of(values), values.dtype, target), target).reshape(
        values.shape
    )


# ----- the fp8 tables -------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _fp8_table(dtype: torch.dtype) -> np.ndarray:
    """Every code's value (float64): NaN where the code is a NaN, ±inf where it is an inf."""
    fmt = FP8_FORMATS[dtype]
    top_exponent = (1 << fmt.exponent_bits) - 1
    values = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent = (code >> fmt.mantissa_bits) & top_exponent
        mantissa = code & ((1 << fmt.mantissa_bits) - 1)
        if fmt.has_inf and exponent == top_exponent:
            values[code] = sign * np.inf if mantissa == 0 else np.nan
        elif not fmt.has_inf and code & 0x7F == 0x7F:
            values[code] = np.nan
        elif exponent == 0:
            values[code] = sign * mantissa * 2.0 ** (1 - fmt.bias - fmt.mantissa_bits)
        else:
            values[code] = (
                sign * (1 + mantissa / (1 << fmt.mantissa_bits)) * 2.0 ** (exponent - fmt.bias)
            )
    values.setflags(write=False)
    return values


@lru_cache(maxsize=None)
def _finite_magnitudes(dtype: torch.dtype) -> np.ndarray:
    """Values of codes 0x00, 0x01, ... up to the largest finite one: ascending by construction."""
    table = _fp8_table(dtype)[:0x80]
    finite = np.isfinite(table)
    magnitudes = table[: int(np.argmin(finite)) if not finite.all() else 0x80].copy()
    assert np.all(np.diff(magnitudes) > 0)
    magnitudes.setflags(write=False)
    return magnitudes


@lru_cache(maxsize=None)
def _sixteen_bit_to_fp8(source: torch.dtype, target: torch.dtype) -> np.ndarray:
    """to_fp8 of every 16-bit pattern of `source`, computed once."""
    codes = to_fp8(widen(np.arange(65536, dtype=np.uint16), source), target)
    codes.setflags(write=False)
    return codes


def _inf_code(dtype: torch.dtype) -> int:
    return int(np.flatnonzero(np.isinf(_fp8_table(dtype)[:0x80]))[0])
