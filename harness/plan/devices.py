"""Device discovery: which torch device types this machine offers, and why the others are absent.

Devices are never assumed. Each probe returns None when the device is usable, or the reason it
is not, so a missing device is a skip with a reason in every report. A probe never raises: a
vendor extension that fails to import is a reason too.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import asdict, dataclass
from typing import Callable, Optional

import torch


def _cpu() -> Optional[str]:
    return None


def _cuda() -> Optional[str]:
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return None


def _rocm() -> Optional[str]:
    if torch.version.hip is None:
        return "not a ROCm build of torch (torch.version.hip is None)"
    return _cuda()


def _module_device(module: str, attribute: str, label: str) -> Callable[[], Optional[str]]:
    def probe() -> Optional[str]:
        if module != "torch":
            if importlib.util.find_spec(module) is None:
                return f"no {label}: {module} is not installed"
            try:
                importlib.import_module(module)
            except Exception as error:  # a broken vendor install is a skip, not a crash
                return f"no {label}: importing {module} failed ({type(error).__name__}: {error})"
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
    torch_type: str = ""  # the torch device type it runs on, when not `name` (rocm -> cuda)

    @property
    def torch_device(self) -> str:
        return self.torch_type or self.name


DEVICE_TYPES: dict[str, DeviceType] = {
    device.name: device
    for device in (
        DeviceType("cpu", "host CPU", _cpu),
        DeviceType("cuda", "NVIDIA CUDA or AMD ROCm (HIP) through torch.cuda", _cuda),
        DeviceType(
            "npu", "Ascend NPU through torch_npu", _module_device("torch_npu", "npu", "Ascend NPU")
        ),
        DeviceType(
            "xpu", "Intel GPU through torch.xpu", _module_device("torch", "xpu", "Intel XPU")
        ),
        DeviceType(
            "musa",
            "Moore Threads GPU through torch_musa",
            _module_device("torch_musa", "musa", "MUSA"),
        ),
    )
}
# Backend registry device types that are not torch device types of their own.
BACKEND_DEVICE_TYPES: dict[str, DeviceType] = {
    "rocm": DeviceType("rocm", "AMD GPU: a ROCm build of torch, through torch.cuda", _rocm, "cuda"),
}


@dataclass(frozen=True)
class DeviceStatus:
    name: str
    description: str
    available: bool
    reason: str  # why it is absent; "" when available
    detail: str = ""  # what was found (device names, build flavour)

    def as_dict(self) -> dict:
        return asdict(self)


def device_type(device: str) -> str:
    return device.split(":", 1)[0]


def unavailable_reason(device: str) -> Optional[str]:
    """None if `device` can be used here, else why not; ValueError for an unknown device type."""
    kind = device_type(device)
    if kind not in DEVICE_TYPES:
        raise ValueError(f"unknown device {device!r}; choose from {', '.join(DEVICE_TYPES)}")
    return DEVICE_TYPES[kind].probe()


def _detail(name: str) -> str:
    if name == "cuda":
        flavour = f"ROCm {torch.version.hip}" if torch.version.hip else f"CUDA {torch.version.cuda}"
        names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
        return f"{flavour}: {torch.cuda.device_count()} x {', '.join(names)}"
    backend = getattr(torch, name, None)
    count = getattr(backend, "device_count", None)
    return f"{count()} device(s)" if callable(count) else ""


def discover() -> list[DeviceStatus]:
    """Every declared device type, available or with the reason it is not."""
    statuses = []
    for device in DEVICE_TYPES.values():
        reason = device.probe()
        statuses.append(
            DeviceStatus(
                device.name,
                device.description,
                reason is None,
                reason or "",
                _detail(device.name) if reason is None else "",
            )
        )
    return statuses


def natural_device(backend_device_type: str) -> str:
    """The torch device a backend runs on natively: "any" backends run on CPU here."""
    if backend_device_type == "any":
        return "cpu"
    if backend_device_type in BACKEND_DEVICE_TYPES:
        return BACKEND_DEVICE_TYPES[backend_device_type].torch_device
    return backend_device_type


def backend_device_reason(backend_device_type: str) -> Optional[str]:
    """None if a backend's native device is here, else why not (ROCm checks the torch build)."""
    if backend_device_type in BACKEND_DEVICE_TYPES:
        return BACKEND_DEVICE_TYPES[backend_device_type].probe()
    try:
        return unavailable_reason(natural_device(backend_device_type))
    except ValueError as error:
        return str(error)
