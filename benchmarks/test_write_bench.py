"""Timed writes per pool kind, era call site and engine; every one verified after timing."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("era", ("legacy", "current"))
@pytest.mark.parametrize("pool", ("mha", "swa_mha", "mla"))
def test_torch_engine_write(timed_write, pool: str, era: str, tokens: int) -> None:
    timed_write(pool, "bf16", era, "torch", tokens)


@pytest.mark.parametrize("dtype", ("fp16", "fp32", "fp8_e4m3"))
def test_torch_engine_dtypes(timed_write, dtype: str, tokens: int) -> None:
    timed_write("mha", dtype, "current", "torch", tokens)


def test_reference_engine_write(timed_write) -> None:
    timed_write("mha", "bf16", "current", "reference", 256, rounds=5)
