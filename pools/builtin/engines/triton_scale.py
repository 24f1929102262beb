"""How torch's in-place `values.div_(scale)` rounds, per device, declared as data.

The Triton engine must leave the caller's tensor and the fp8 bytes exactly as `div_` then
`.to()` would on the device the kernel runs on, so it reproduces torch's arithmetic, not the
mathematically nicest one. A rule says whether torch divides or multiplies by a reciprocal,
and whether the scale is first rounded to the input dtype. Only the CPU rule is measured here
(tests/test_triton_scale.py); the CUDA rules are read from aten's div_true_kernel_cuda and must
be confirmed on a GPU (scripts/gpu_check.py; docs/devices.md says what to look at).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

ScaleLike = Union[None, float, torch.Tensor]


@dataclass(frozen=True)
class DivisionRule:
    device_type: str
    scale_on_device: bool  # the scale is a tensor on the (non-CPU) device of the values
    mode: str  # "divide": x / s; "reciprocal": x * (1 / s); both in fp32
    scale_in_input_dtype: bool  # the scale is cast to the values' dtype before the op
    verified: bool  # measured on this device type by this project's tests
    evidence: str


DIVISION_RULES: tuple[DivisionRule, ...] = (
    DivisionRule(
        "cpu",
        False,
        "divide",
        False,
        True,
        "torch 2.13 CPU: x.div_(s) == (fp32(x) / fp32(s)).to(x.dtype) for bf16/fp16/fp32 "
        "x and float, 0-d tensor and Parameter scales (measured)",
    ),
    DivisionRule(
        "cuda",
        False,
        "reciprocal",
        False,
        False,
        "aten div_true_kernel_cuda: a CPU scalar divisor becomes x * (1 / s) in opmath "
        "(from the source; verify with scripts/gpu_check.py)",
    ),
    DivisionRule(
        "cuda",
        True,
        "divide",
        True,
        False,
        "a 0-d CUDA tensor is read as the values' dtype, then DivFunctor divides in "
        "opmath (from the source; verify with scripts/gpu_check.py)",
    ),
)


def division_rule(device_type: str, scale: ScaleLike) -> Optional[DivisionRule]:
    on_device = isinstance(scale, torch.Tensor) and scale.device.type != "cpu"
    for rule in DIVISION_RULES:
        if rule.device_type == device_type and rule.scale_on_device == on_device:
            return rule
    return None


def scale_operand(scale: ScaleLike, values: torch.Tensor) -> tuple[str, float]:
    """("none" | "divide" | "reciprocal", the fp32 operand the kernel applies to `values`)."""
    if scale is None:
        return "none", 1.0
    rule = division_rule(values.device.type, scale)
    if rule is None:
        raise NotImplementedError(
            f"no division rule declared for device {values.device.type!r} "
            f"with a {type(scale).__name__} scale"
        )
    operand = (
        scale.detach().to("cpu", torch.float32)
        if isinstance(scale, torch.Tensor)
        else torch.tensor(scale, dtype=torch.float32)
    )
    if rule.scale_in_input_dtype:
        operand = operand.to(values.dtype).float()
    if rule.mode == "reciprocal":
        operand = torch.tensor(1.0, dtype=torch.float32) / operand
    return rule.mode, float(operand)
