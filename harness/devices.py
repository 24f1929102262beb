"""Device discovery: which torch device types this machine offers, and why the others are absent.

Devices are never assumed. Each probe returns None when the device is usable, or the reason it
is not, so a missing device is a skip with a reason in every report.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Callable, Optional

import torch


def _cpu() -> Optional[str]:
    return None


def _cuda() -> Optional[str]:
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return None


def _module_device(module: str, attribute: str, label: str) -> Callable[[], Optional[str]]:
    def probe() -> Optional[str]:
        if module != "torch" and importlib.util.find_spec(module) is None:
            return f"no {label}: {module} is not installed"
        if module != "torch":
            importlib.import_module(module)
        backend = getattr(torch, attribute, None)
        if backend is None or not backend.is_available():
            return f"no {label} device (torch.{attribute}.is_available() is False)"
        return None
    return probe


@dataclass(frozen=True)
class DeviceType:
    name: str
    description: str
    probe: Callable[[], Optional[str]]


DEVICE_TYPES: dict[str, DeviceType] = {
    device.name: device
    for device in (
        DeviceType("cpu", "host CPU", _cpu),
        DeviceType("cuda", "NVIDIA CUDA or AMD ROCm (HIP) through torch.cuda", _cuda),
        DeviceType("npu", "Ascend NPU through torch_npu", _module_device("torch_npu", "npu", "Ascend NPU")),
        DeviceType("xpu", "Intel GPU through torch.xpu", _module_device("torch", "xpu", "Intel XPU")),
        DeviceType("musa", "Moore Threads GPU through torch_musa", _module_device("torch_musa", "musa", "MUSA")),
    )
}


def device_type(device: str) -> str:
    return device.split(":", 1)[0]


def unavailable_reason(device: str) -> Optional[str]:
    """None if `device` can be used here, else why not; ValueError for an unknown device type."""
    kind = device_type(device)
    if kind not in DEVICE_TYPES:
        raise ValueError(f"unknown device {device!r}; choose from {', '.join(DEVICE_TYPES)}")
    return DEVICE_TYPES[kind].probe()
