"""The judge's own in-place division of the caller's k/v by a layer scale, in the input dtype.

SGLang's MHA pool does `cache_k.div_(k_scale)`. On CPU torch computes that quotient in fp32 for
fp32, bf16 and fp16 inputs (the scale as fp32: a Python float, a 0-d tensor or an nn.Parameter,
whatever its own float dtype) and rounds it once to the input dtype; a dimensioned float64 scale
promotes the quotient to float64. The quotient is written back into the caller's memory, so the
caller sees it, as in SGLang. fp8 inputs cannot be divided on CPU, and the judge raises what
torch raises there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pools.judge.casts import FP8_FORMATS, bits_of, bits_view, to_bf16, to_fp16, widen

_DIVIDABLE = (torch.float32, torch.bfloat16, torch.float16)


def divide_in_place(values: torch.Tensor, scale: Any) -> None:
    """values /= scale, in values' dtype and memory."""
    divisor, wide = _divisor(values, scale)
    quotient_shape = np.broadcast_shapes(tuple(values.shape), divisor.shape)
    if quotient_shape != tuple(values.shape):
        raise RuntimeError(
            f"output with shape {list(values.shape)} doesn't match the broadcast "
            f"shape {list(quotient_shape)}"
        )
    dividend = widen(bits_of(values), values.dtype).reshape(values.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        quotient = dividend.astype(divisor.dtype) / divisor
        if wide:
            quotient = quotient.astype(np.float32)
    bits_view(values)[...] = _narrow(quotient, values.dtype)


def _divisor(values: torch.Tensor, scale: Any) -> tuple[np.ndarray, bool]:
    """The scale as an fp32 (or, promoting, float64) array, and whether it promotes."""
    dimensioned = isinstance(scale, torch.Tensor) and scale.dim() > 0
    if values.dtype in FP8_FORMATS:
        if dimensioned:
            raise RuntimeError(
                f"Promotion for Float8 Types is not supported, attempted to promote "
                f"{values.dtype} and {scale.dtype}"
            )
        raise NotImplementedError(f'"div_cpu_reduced_float" not implemented for {values.dtype}')
    if values.dtype not in _DIVIDABLE:
        raise TypeError(
            f"the judge divides {', '.join(map(str, _DIVIDABLE))} inputs; got {values.dtype}"
        )
    if not isinstance(scale, torch.Tensor):
        return np.array(float(scale), dtype=np.float32), False
    held = scale.detach().cpu()
    if held.dtype == torch.float64:
        array = held.contiguous().numpy()
        return (array, True) if dimensioned else (array.astype(np.float32), False)
    if held.dtype in _DIVIDABLE:
        return widen(bits_of(held), held.dtype).reshape(held.shape), False
    return np.array(held.tolist(), dtype=np.float32), False


def _narrow(quotient: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    if dtype == torch.float32:
        return quotient.astype(np.float32).view(np.uint32)
    if dtype == torch.bfloat16:
        return to_bf16(quotient)
    return to_fp16(quotient)
