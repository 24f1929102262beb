"""The judge's own arithmetic (pools/judge: NumPy bit casts, in-place division, the FP4 quantiser)
gives the bytes torch and pools/builtin/fp4 give, so the judge shares no code with what it judges
and still agrees with torch bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pools.builtin.fp4 import torch_quant
from pools.judge import casts, fp4
from pools.judge.divide import divide_in_place

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _same_bits(want: torch.Tensor, got: torch.Tensor, nan_as_equal: bool) -> np.ndarray:
    """Indices where the bit patterns differ (two NaNs count as equal when asked)."""
    want_bits, got_bits = casts.bits_of(want), casts.bits_of(got)
    differs = want_bits != got_bits
    if nan_as_equal:
        both_nan = np.isnan(casts.widen(want_bits, want.dtype)) & np.isnan(
            casts.widen(got_bits, got.dtype)
        )
        differs &= ~both_nan
    return np.flatnonzero(differs)


@pytest.mark.parametrize("target", [torch.float32, torch.float16, *FP8])
def test_every_bf16_pattern_casts_as_torch(target):
    patterns = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    assert (
        len(_same_bits(patterns.to(target), casts.cast(patterns, target), nan_as_equal=False)) == 0
    )


def fp32_sample(count: int = 100_000, seed: int = 16) -> torch.Tensor:
    """Seeded fp32 values: random bit patterns (NaN payloads, subnormals, inf), normal values over
    every binade the narrow formats use, and each format's edges (max, the rounding midpoint
    beyond it, ties), ±0, ±inf, NaN."""
    rng = np.random.default_rng(seed)
    edges = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-45,
        -1e-45,
        1.17e-38,
        2.0**-149,
        2.0**-126,
        448.0,
        464.0,
        479.99,
        480.0,
        1e6,
        57344.0,
        61439.0,
        61440.0,
        65504.0,
        65519.99,
        65520.0,
        3.3895e38,
        3.4028235e38,
        2.0**-9,
        2.0**-10,
        2.0**-16,
        2.0**-17,
        2.0**-24,
        2.0**-25,
    ]
    edges = np.array(edges + [-e for e in edges], dtype=np.float32)
    bits = rng.integers(0, 2**32, count // 2, dtype=np.uint64).astype(np.uint32).view(np.float32)
    spread = (
        rng.standard_normal(count - len(edges) - len(bits))
        * np.exp2(rng.integers(-30, 30, count - len(edges) - len(bits)))
    ).astype(np.float32)
    return torch.from_numpy(np.concatenate([edges, bits, spread]))


@pytest.mark.parametrize("target", [torch.bfloat16, torch.float16, *FP8])
def test_fp32_sample_casts_as_torch(target):
    values = fp32_sample()
    # torch's bf16 NaN is 0xFFFF from its vectorised kernel and 0x7FC0 from a strided input:
    # not stable, so bf16 NaNs are compared as "both NaN". Every other target is bitwise.
    differs = _same_bits(
        values.to(target), casts.cast(values, target), nan_as_equal=target == torch.bfloat16
    )
    assert len(differs) == 0, values[differs[:5]]


def test_bf16_nan_payload_is_not_stable_in_torch():
    """Why bf16 NaNs are compared loosely: the same NaN casts to two payloads."""
    nan = torch.full((32, 2), float("nan"))
    contiguous, strided = nan[:, 0].contiguous().to(torch.bfloat16), nan[:, 0].to(torch.bfloat16)
    assert {int(b) & 0xFFFF for b in contiguous.view(torch.int16)} == {0xFFFF}
    assert {int(b) & 0xFFFF for b in strided.view(torch.int16)} == {0x7FC0}


SCALES = {
    "float": lambda: 0.3,
    "int": lambda: 3,
    "tensor": lambda: torch.tensor(1.7),
    "param": lambda: torch.nn.Parameter(torch.tensor(0.3), requires_grad=False),
    "double-0d": lambda: torch.tensor(0.3, dtype=torch.float64),
    "one-element": lambda: torch.tensor([0.3]),
    "double-1d": lambda: torch.tensor([0.3], dtype=torch.float64),
    "per-dim": lambda: torch.linspace(0.2, 3.0, 16),
}


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "fused-view"])
@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_division_in_place_is_torch_div_(dtype, scale, strided):
    values = (fp32_sample(4096, seed=3).reshape(128, 2, 16) % 1000).to(dtype)
    if strided:  # the k columns of a fused qkv tensor
        fused = torch.zeros(128, 2, 40, dtype=dtype)
        fused[..., 8:24] = values
        want, got = fused.clone()[..., 8:24], fused.clone()[..., 8:24]
    else:
        want, got = values.clone(), values.clone()
    want.div_(SCALES[scale]())
    divide_in_place(got, SCALES[scale]())
    assert len(_same_bits(want, got, nan_as_equal=True)) == 0


@pytest.mark.parametrize("shape", [(7, 2, 32), (5, 1, 80), (3, 4, 8)])
@pytest.mark.parametrize("spread", [1.0, 1e-3, 1e5])
def test_fp4_bytes_match_pools_fp4(shape, spread):
    g = torch.Generator().manual_seed(len(shape) + int(spread))
    values = (torch.randn(shape, generator=g) * spread).to(torch.bfloat16)
    values[0, 0, :4] = torch.tensor([0.0, -0.0, 6.0 * spread, -3.0 * spread])
    packed, scales = fp4.quantize(values)
    want_packed, want_scales = torch_quant.quantize(values)
    assert np.array_equal(packed, want_packed.numpy()) and np.array_equal(
        scales, want_scales.numpy()
    )
