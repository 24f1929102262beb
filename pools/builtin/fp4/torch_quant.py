"""The FP4 quantiser vectorised in torch, byte-identical to pools.builtin.fp4.quantiser.

The exponent is exact: frexp gives ratio = m * 2**E with m in [0.5, 1), so ceil(log2(ratio)) is
E - 1 when m == 0.5 and E otherwise, with no log2 rounding to disagree about.
"""

from __future__ import annotations

import torch

from pools.builtin.fp4.quantiser import (
    BLOCK,
    E2M1_BOUNDS,
    E2M1_MAX,
    SCALE_BIAS,
    SCALE_FLOOR,
    check_shape,
)


def quantize(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    check_shape(values)
    tokens, heads, dim = values.shape
    blocks = values.to(torch.float32).reshape(tokens, -1, BLOCK)
    ratio = torch.clamp(
        blocks.abs().amax(dim=-1, keepdim=True) / E2M1_MAX,
        min=torch.tensor(SCALE_FLOOR, dtype=torch.float32).item(),
    )
    if not bool(torch.isfinite(ratio).all()):
        raise ValueError(
            "FP4 block scale of a non-finite block is undefined (SGLang casts inf to uint8)"
        )
    mantissa, exponent = torch.frexp(ratio)
    exponent = torch.where(mantissa == 0.5, exponent - 1, exponent)
    scaled = blocks / torch.exp2(exponent.to(torch.float32))
    bounds = torch.tensor(E2M1_BOUNDS, dtype=torch.float32, device=values.device)
    magnitude = (scaled.abs().unsqueeze(-1) >= bounds).sum(dim=-1)
    codes = (magnitude + (scaled < 0) * 8).to(torch.uint8).reshape(tokens, heads, dim)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    scales = (exponent + SCALE_BIAS).to(torch.uint8).reshape(tokens, -1)
    return packed, scales
