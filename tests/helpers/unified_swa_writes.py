"""The writes the unified SWA pool tests (target and fused draft) make on both the judge's pool and
the installed release's, so the two can be compared byte for byte: layer 2 full, layer 1 SWA."""

from __future__ import annotations

from typing import Any, Callable

import torch

from pools.kinds.landing import unified_swa_slot
from scenarios.model import Geometry

FULL, SWA = (type("Layer", (), {"layer_id": i, "is_cross_attention": False})() for i in (2, 1))


def bf16_rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def write_three(pool: Any, write_loc: Callable[..., Any], geometry: Geometry) -> None:
    """A full layer at loc; a full layer given a full_loc one past loc, with other rows; a SWA
    layer at its physical swa_loc. Heads 2, head_dim 32, v_head_dim 16."""
    loc, swa = torch.tensor([5, 9, 17]), unified_swa_slot(geometry, torch.tensor([4, 7, 9]))
    k, v = bf16_rows(0, 3, 2, 32), bf16_rows(1, 3, 2, 16)
    pool.set_kv_buffer(FULL, write_loc(loc, swa, physical=True), k, v)
    pool.set_kv_buffer(
        FULL, write_loc(loc, swa, loc + 1, physical=True), v.repeat(1, 1, 2), k[..., :16]
    )
    pool.set_kv_buffer(SWA, write_loc(loc, swa, physical=True), k, v)
