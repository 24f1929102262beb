"""Pin each pytest-xdist worker to its own accelerator on a multi-device host.

Worker gwN takes device N % device_count of each accelerator type present (cuda, npu, xpu),
through the device module's set_device, so tests that say "cuda" land on distinct devices. The
controller and plain (non-xdist) runs keep the default device.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional

ACCELERATOR_TYPES = ("cuda", "npu", "xpu")


def worker_index(environ: Mapping[str, str]) -> Optional[int]:
    """N of PYTEST_XDIST_WORKER=gwN; None outside an xdist worker."""
    match = re.fullmatch(r"gw(\d+)", environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else None


def worker_device(device_type: str, device_count: int, environ: Mapping[str, str]) -> Optional[str]:
    """The device this worker pins, e.g. 'cuda:1' for gw3 on two devices; None: leave as is."""
    index = worker_index(environ)
    if index is None or device_count < 2:
        return None
    return f"{device_type}:{index % device_count}"


def pin_worker_devices(environ: Mapping[str, str]) -> dict[str, str]:
    """Pin this worker on every accelerator type with two or more devices; what it pinned."""
    import torch

    pinned = {}
    for device_type in ACCELERATOR_TYPES:
        module = getattr(torch, device_type, None)
        if module is None or not module.is_available():
            continue
        device = worker_device(device_type, module.device_count(), environ)
        if device is not None:
            module.set_device(int(device.split(":")[1]))
            pinned[device_type] = device
    return pinned
