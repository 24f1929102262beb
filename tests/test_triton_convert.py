"""The Triton engine's rounding equals torch's, bit for bit: casts over every bf16 bit pattern
and the fp8 range limits, and in-place scale division for every scale kind (interpreted on CPU)."""

from __future__ import annotations

import pytest
import torch

from pools.builtin.engines.torch_engine import TorchEngine
from pools.builtin.engines.triton_engine import TritonEngine
from pools.builtin.engines.triton_scale import scale_operand

# Compiled on a CUDA device where there is one (TRITON_INTERPRET on CPU otherwise).
pytestmark = pytest.mark.gpu

ENGINE = TritonEngine()
DEVICE = "cpu" if ENGINE.interpreted else "cuda"
OUT_DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn, torch.float8_e5m2]


def _limits() -> torch.Tensor:
    """fp32 values at and around every rounding edge of the fp8 formats."""
    edges = [
        448.0,
        464.0,
        479.99,
        480.0,
        57344.0,
        61439.0,
        61440.0,
        65535.0,
        65536.0,
        2.0**-6,
        2.0**-7,
        2.0**-9,
        2.0**-10,
        2.0**-14,
        2.0**-16,
        2.0**-17,
        1.5 * 2.0**-17,
        0.0,
        float("inf"),
        1e-30,
        3e38,
    ]
    values = torch.tensor(edges, dtype=torch.float32)
    bits = values.view(torch.int32)
    around = torch.cat([bits - 1, bits, bits + 1]).view(torch.float32)
    return torch.cat([around, -around])


def _cast_with_engine(values: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    rows = values.reshape(-1, 1, 256).to(DEVICE)
    buffer = torch.zeros(rows.shape[0] + 1, 1, 256, dtype=out_dtype, device=DEVICE).view(
        torch.uint8
    )
    store = torch.uint8 if out_dtype.itemsize == 1 else out_dtype
    ENGINE.store_rows(
        buffer.view(store),
        torch.arange(1, rows.shape[0] + 1, device=DEVICE),
        rows,
        out_dtype,
        store,
    )
    return buffer[1:].reshape(-1).cpu()


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
def test_cast_of_every_bf16_and_random_fp32_pattern_matches_torch(out_dtype):
    every_bf16 = (
        torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    )
    random_fp32 = torch.randint(
        -(2**31), 2**31 - 1, (2**14,), generator=torch.Generator().manual_seed(5), dtype=torch.int32
    ).view(torch.float32)
    padded = torch.cat([_limits(), random_fp32])
    padded = torch.cat([padded, torch.zeros(-padded.numel() % 256)])
    for values in (every_bf16, padded):
        # torch's own NaN bit patterns differ between its scalar and vector casts: compare
        # only where torch's result is not NaN, and there require our NaN to stay NaN.
        want = values.to(out_dtype)
        got = _cast_with_engine(values, out_dtype).view(out_dtype)
        finite = ~want.float().isnan()
        assert torch.equal(got[finite].view(torch.uint8), want[finite].view(torch.uint8))
        assert got[~finite].float().isnan().all()


def _scale(kind: str, value: float):
    if kind == "float":
        return value
    tensor = torch.tensor(value, device=DEVICE)
    return tensor if kind == "tensor" else torch.nn.Parameter(tensor, requires_grad=False)


@pytest.mark.parametrize("pool_dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("input_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_scaled_fp8_store_matches_torch_for_every_scale_kind(pool_dtype, input_dtype):
    generator = torch.Generator().manual_seed(1)
    top = torch.finfo(pool_dtype).max
    for kind in ("float", "tensor", "param"):
        for scale_value in (0.3, 1.7, 0.25):
            # Values that land on the fp8 range limits after division, and ordinary ones.
            edge = (
                torch.tensor([top, top * 1.04, top * 1.1, -top * 1.02, 2.0**-9, 2.0**-17])
                * scale_value
            )
            k = (
                torch.cat([edge, torch.randn(58, generator=generator) * 8])
                .reshape(4, 2, 8)
                .to(input_dtype)
            )
            v = (torch.randn(4, 2, 8, generator=generator) * 8).to(input_dtype)
            buffers = []
            for engine in (ENGINE, TorchEngine()):  # torch on CPU is the reference (test_pools.py)
                k_buffer, v_buffer = torch.zeros(2, 9, 2, 8, dtype=torch.uint8, device=DEVICE)
                ks, vs = k.to(DEVICE, copy=True), v.to(DEVICE, copy=True)
                engine.store_kv(
                    k_buffer,
                    v_buffer,
                    torch.tensor([3, 1, 8, 5], device=DEVICE),
                    ks,
                    vs,
                    _scale(kind, scale_value),
                    _scale(kind, 2.0),
                    pool_dtype,
                    torch.uint8,
                )
                buffers.append([t.view(torch.uint8) for t in (k_buffer, v_buffer, ks, vs)])
            for got, want in zip(*buffers):
                assert torch.equal(got, want), (kind, scale_value)


@pytest.mark.skipif(
    DEVICE != "cpu", reason="the CPU rule; scripts/gpu_check.py checks the CUDA ones"
)
def test_cpu_division_rule_is_what_torch_does():
    """The measured CPU rule: fp32(x) / fp32(s), rounded once to x's dtype."""
    x = (torch.randn(4096, generator=torch.Generator().manual_seed(2)) * 8).bfloat16()
    for scale in (0.3, torch.tensor(0.3), torch.tensor(0.3, dtype=torch.float64)):
        mode, operand = scale_operand(scale, x)
        assert mode == "divide" and operand == float(torch.tensor(0.3, dtype=torch.float32))
        assert torch.equal(x.clone().div_(scale), (x.float() / operand).bfloat16())
    assert scale_operand(None, x) == ("none", 1.0)
