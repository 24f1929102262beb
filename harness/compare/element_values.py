"""What a byte finding's first differing element holds: the expected and the written element in
hex, decoded in the cache dtype, and the scenario's input value (with the layer's scale) that
the writing token handed the pool. A developer reads "the release wrote k unscaled" from the
finding itself instead of opening the buffers.

Only where a row is the cache dtype's elements in order (pools/kinds/layer_buffers.py gives every
layout's buffers one row per slot): FP4, NVFP4 and DeepSeek V4 rows pack codes and scales,
and an index or QSA row mixes dtypes, so those keep their hex window alone.
"""

from __future__ import annotations

from typing import Optional

import torch

from pools.dtypes import dtype_spec
from scenarios.materialize import token_tensors
from scenarios.model import Scale, Scenario

# Row parts that hold the cache dtype's elements; the MHA ones with the scale that divides them
# (a MiniMax sparse layer's index k and v take the k and v scales: harness/compare/values.py).
MHA_PARTS = {"k": "k", "v": "v", "idx_k": "k", "idx_v": "v"}
MLA_PARTS = ("kv", "nope", "rope")


def _decodable(scenario: Scenario, part: str) -> bool:
    g = scenario.geometry
    if g.kind.fp4 or g.kind.nvfp4_page_rows or g.kind.dsv4 or not g.kind.keeps_kv:
        return False
    return part in (MLA_PARTS if g.kind.latent else MHA_PARTS)


def _number(value: float) -> str:
    return f"{value:.6g}"


def _element(row: torch.Tensor, index: int, dtype: torch.dtype) -> tuple[str, float]:
    """(hex, value) of element `index` of a uint8 row holding `dtype` elements, little-endian as
    the buffer stores them; the hex is the element's word, most significant byte first."""
    width = dtype.itemsize
    raw = row[index * width : (index + 1) * width].contiguous()
    word = bytes(raw.numpy().tobytes())[::-1].hex().upper()
    return f"0x{word}", float(raw.view(dtype)[0].float())


def _input_of(scenario: Scenario, part: str, forward: int, token: int, index: int, layer: int):
    """The caller's value of element `index` of the token's row, and the scenario's scale for
    that part, named (None: a scale-less scenario); (None, None) where the row has no such
    element."""
    tensors = token_tensors(scenario, forward, layer, "cpu")
    if (
        scenario.geometry.kind.latent
    ):  # the latent row: nope ++ rope, which a call site may scale by k's
        nope, rope = tensors.get("k"), tensors.get("k_rope")
        pieces = {"nope": [nope], "rope": [rope], "kv": [nope, rope]}[part]
        row = torch.cat([p[token].flatten() for p in pieces if p is not None])
        which, values = "k", row
    else:
        if tensors.get(part) is None:
            return None, None
        which, values = MHA_PARTS[part], tensors[part][token].flatten()
    if index >= values.numel():
        return None, None
    scale: Scale = scenario.k_scale if which == "k" else scenario.v_scale
    named = None if scale.kind == "none" else (f"{which}_scale", float(scale.value))
    return float(values[index].float()), named


def element_note(
    scenario: Scenario,
    buffer: str,
    want: torch.Tensor,
    got: torch.Tensor,
    byte_offset: int,
    writer: Optional[tuple[int, int]] = None,
    expected_by: str = "expected",
) -> Optional[str]:
    """`expected bf16 0x3F00 (0.5), wrote 0x4000 (2); input 2 with k_scale 4 (element 5 of the
    token's row)`, for the element holding
    `byte_offset` of uint8 rows `want` and `got`; `writer` (forward, token) adds the caller's
    input; `expected_by` words the expected side ("torch computes" for the value oracle, whose
    expectation is torch's own cast). None where the row is not the cache dtype's elements
    (FP4, NVFP4, V4, index rows)."""
    layer, part = int(buffer[1:].split(".")[0]), buffer.split(".", 1)[1]
    if not _decodable(scenario, part):
        return None
    spec = dtype_spec(scenario.geometry.dtype)
    index = byte_offset // spec.dtype.itemsize
    if (index + 1) * spec.dtype.itemsize > want.shape[-1]:
        return None
    want_hex, want_value = _element(want, index, spec.dtype)
    got_hex, got_value = _element(got, index, spec.dtype)
    note = (
        f"{expected_by} {spec.name} {want_hex} ({_number(want_value)}), "
        f"wrote {got_hex} ({_number(got_value)})"
    )
    if writer is None:
        return note
    value, scale = _input_of(scenario, part, *writer, index, layer)
    if value is None:
        return note
    # The input and the scale as the scenario made them; whether the call site divides by the
    # scale is the backend's (a cast-free write does not), so no quotient is claimed.
    with_scale = f" with {scale[0]} {_number(scale[1])}" if scale else ""
    return f"{note}; input {_number(value)}{with_scale} (element {index} of the token's row)"
