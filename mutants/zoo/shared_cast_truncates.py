"""The builtin current-era pools on a torch engine whose shared cast step (StoreEngine.prepare in
pools/builtin/engines/base.py, which the reference engine uses too) rounds toward zero instead of to
nearest. Built on pools.builtin.sut with its own engine instance: no global is patched, so only this
SUT carries the fault, as if the shared code were broken for the engine under test alone."""

import torch

from pools.builtin.engines.torch_engine import TorchEngine
from pools.builtin.sut import builtin_module

_SAME_WIDTH_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32}


def _toward_zero(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`values` in `dtype`, truncated: a result farther from zero than the input steps one ulp
    back (a sign-magnitude float's integer bits minus one)."""
    rounded = values.to(dtype)
    overshoot = rounded.to(values.dtype).abs() > values.abs()
    bits = rounded.view(_SAME_WIDTH_INT[dtype.itemsize])
    return torch.where(overshoot, bits - 1, bits).view(dtype)


class TruncatingEngine(TorchEngine):
    def prepare(self, values, scale, dtype, store_dtype):
        if values.dtype != dtype:
            if scale is not None:
                values.div_(scale)
            values = _toward_zero(values, dtype)
        if store_dtype != dtype:
            values = values.view(store_dtype)
        return values


_BASE = builtin_module("current", "torch")
ENGINE = TruncatingEngine()
MHATokenToKVPool = type("MHATokenToKVPool", (_BASE.MHATokenToKVPool,), {"engine": ENGINE})
MLATokenToKVPool = type("MLATokenToKVPool", (_BASE.MLATokenToKVPool,), {"engine": ENGINE})
SWAKVPool = type("SWAKVPool", (_BASE.SWAKVPool,), {"default_sub_pool_class": MHATokenToKVPool})
KVWriteLoc, unwrap_write_loc = _BASE.KVWriteLoc, _BASE.unwrap_write_loc
