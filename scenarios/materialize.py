"""Regenerate a scenario's tensors bit-for-bit on any device.

Values are drawn on CPU from a generator seeded by (seed, forward, layer) and only then moved,
so the same scenario yields the same bytes everywhere.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from pools.dtypes import DTYPES, dtype_spec
from scenarios.model import Forward, Scale, Scenario

# fp8 e4m3 saturates at 448: keep draws well inside it after division by scales down to 1/4.
AMPLITUDE = 8.0


def input_dtype(scenario: Scenario) -> torch.dtype:
    if scenario.input_dtype is not None:
        return DTYPES[scenario.input_dtype].dtype
    spec = dtype_spec(scenario.geometry.dtype)
    return torch.bfloat16 if spec.is_fp8 else spec.dtype


def loc_tensor(slots: list[int], scenario: Scenario, device: str) -> torch.Tensor:
    return torch.tensor(slots, dtype=getattr(torch, scenario.loc_dtype), device=device)


def mapping_tensor(scenario: Scenario, device: str) -> Optional[torch.Tensor]:
    """full_to_swa_index_mapping with SGLang's trailing -1 (so mapping[-1] == -1)."""
    if scenario.mapping is None:
        return None
    return torch.tensor(scenario.mapping + [-1], dtype=torch.int64, device=device)


def scale_object(scale: Scale, device: str) -> Any:
    if scale.kind == "none":
        return None
    if scale.kind == "float":
        return float(scale.value)
    tensor = torch.tensor(scale.value, dtype=torch.float32, device=device)
    if scale.kind == "tensor":
        return tensor
    return torch.nn.Parameter(tensor, requires_grad=False)


def _draw(generator: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return (torch.randn(shape, generator=generator, dtype=torch.float32) * AMPLITUDE).to(dtype)


def token_tensors(scenario: Scenario, forward_index: int, layer_id: int,
                  device: str) -> dict[str, Optional[torch.Tensor]]:
    """The caller's k/v (MHA) or k nope/rope (MLA) for one (forward, layer), `tokens` rows."""
    g = scenario.geometry
    forward = scenario.forwards[forward_index]
    generator = torch.Generator().manual_seed(
        (scenario.seed * 1_000_003 + forward_index * 1_009 + layer_id) % (2**63))
    dtype = input_dtype(scenario)
    rows = forward.tokens
    if g.is_mla:
        nope = _draw(generator, (rows, 1, g.kv_lora_rank), dtype)
        rope = _draw(generator, (rows, 1, g.qk_rope_head_dim), dtype) if g.qk_rope_head_dim else None
        return {"k": nope.to(device), "v": nope.clone().to(device),
                "k_rope": None if rope is None else rope.to(device)}
    v_head_dim = g.v_head_dim or g.head_dim
    k = _draw(generator, (rows, g.head_num, g.head_dim), dtype)
    v = _draw(generator, (rows, g.head_num, v_head_dim), dtype)
    return {"k": k.to(device), "v": v.to(device), "k_rope": None}


def write_slots(scenario: Scenario, forward: Forward, layer_id: int) -> list[int]:
    """The slots a correct pool writes for this (forward, layer), in token order."""
    g = scenario.geometry
    source = forward.encoder_loc if layer_id in forward.cross_layers else forward.loc
    slots = source[: forward.tokens]
    if g.is_swa and layer_id in g.swa_layer_ids:
        return [scenario.mapping[slot] for slot in slots]
    return list(slots)
