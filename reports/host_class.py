"""The host class: a short, stable description of a host's CPU, stamped on every stored row.

Part of the machine key the regression gate compares within (reports/schema.py
MACHINE_COLUMNS): two hosts of one cloud instance type share a class, while the same GPU model
behind another CPU does not (the host launches every write, so it sets a short write's time).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def host_class_of(cpu_model: str, logical_cpus: int | None) -> str:
    """`"<cpu model> x<logical cpus>"`, whitespace folded (cpuinfo pads some model names);
    the model alone when the count is unknown. pytest-benchmark rows use it too, so one host
    has one class whoever recorded it."""
    model = " ".join(cpu_model.split())
    return f"{model} x{logical_cpus}" if logical_cpus else model


def _cpuinfo_model(cpuinfo: Path) -> str:
    """The first `model name` of a Linux cpuinfo file; "" where there is none (not Linux, or
    an ARM kernel, which names parts rather than models) or it cannot be read."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                name, _, value = line.partition(":")
                if name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return ""


def _platform_model() -> str:
    try:
        return platform.processor() or platform.machine()
    except Exception:  # platform shells out on some systems: a failure is only less detail
        return ""


def host_class(cpuinfo: Path = CPUINFO) -> str:
    """This host's class, e.g. "AMD EPYC 9654 96-Core Processor x192"; never raises (without a
    readable cpuinfo it is the processor or architecture the platform module reports)."""
    model = _cpuinfo_model(cpuinfo) or _platform_model() or "unknown"
    return host_class_of(model, os.cpu_count())
