"""Timed writes per pool kind, era call site and engine; every one verified after timing."""

from __future__ import annotations

import pytest

from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA


@pytest.mark.parametrize("era", ("legacy", "current"))
@pytest.mark.parametrize("pool", names(MHA, SWA_MHA, MLA))
def test_torch_engine_write(timed_write, pool: str, era: str, tokens: int) -> None:
    timed_write(pool, "bf16", era, "torch", tokens)


@pytest.mark.parametrize("dtype", ("fp16", "fp32", "fp8_e4m3"))
def test_torch_engine_dtypes(timed_write, dtype: str, tokens: int) -> None:
    timed_write(MHA.name, dtype, "current", "torch", tokens)


def test_reference_engine_write(timed_write) -> None:
    timed_write(MHA.name, "bf16", "current", "reference", 256, rounds=5)
