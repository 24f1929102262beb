"""The capability matrix: store engine x pool kind x dtype x layout x device, declared as data.

Rules are matched in order, first match wins (like PyTorch OpInfo's DecorateInfo): a rule says
whether the engine can write that cell and why not. Whether it *is* checked on this machine
also needs the device present and the engine importable; `cell_status` combines the three, and
both the run planner (harness/plan/) and `kvh matrix` read it.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import asdict, dataclass
from typing import Optional

import torch

from harness.plan.devices import DEVICE_TYPES, unavailable_reason
from pools.builtin.engines import ENGINES
from pools.builtin.layouts.kinds import LAYOUT_KINDS
from pools.dtypes import DTYPES
from pools.kinds.registry import kinds_where
from scenarios.model import POOL_KINDS

ANY = ("*",)
LAYOUTS: dict[str, str] = {
    "nhd": "token-major rows: (size + page_size, heads, dim); FP4 pools add block-scale rows",
    "hnd": "page-major: (pages, heads, page_size, dim)",
    "npu": "NPU pools: one (layers, pages, page_size, heads, dim) tensor; MLA latent and rope "
    "apart (modelled with torch ops; on an NPU host the torch engine runs them on the device, "
    "the real torch_npu scatter ops are not driven yet)",
    "aiter5d": "aiter vectorized_5d: K (blocks, heads, dim/X, page, X), "
    "V (blocks, heads, page/X, dim, X)",
    "unified": "unified memory pool: one byte buffer, a slot's entry holds every layer's K and V "
    "rows; per-layer (slots, heads, dim) views with the entry as slot stride",
}


def layout_of(pool: str) -> str:
    kind = LAYOUT_KINDS.get(pool)
    return kind.layout if kind is not None else "nhd"


@dataclass(frozen=True)
class Capability:
    engine: tuple[str, ...]
    devices: tuple[str, ...]
    supported: bool
    reason: str
    layouts: tuple[str, ...] = ANY
    pools: tuple[str, ...] = ANY
    dtypes: tuple[str, ...] = ANY
    opt_in: bool = False  # runnable, but only when named with --engine (too slow by default)

    def matches(self, engine: str, pool: str, dtype: str, layout: str, device: str) -> bool:
        return all(
            field == ANY or value in field
            for field, value in (
                (self.engine, engine),
                (self.devices, device),
                (self.layouts, layout),
                (self.pools, pool),
                (self.dtypes, dtype),
            )
        )


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        ("triton",),
        ANY,
        False,
        "no Triton FP4 quantiser yet: the Triton engine would fall "
        "back to the reference quantiser, so no Triton cell is claimed",
        pools=kinds_where(lambda kind: kind.fp4),
    ),
    Capability(
        ("triton",),
        ANY,
        False,
        "the Triton engine writes NHD and HND rows only; NPU and "
        "aiter 5-D slots go through the torch fallback, so no Triton cell is claimed",
        layouts=("npu", "aiter5d"),
    ),
    Capability(
        ("reference",),
        ("cpu",),
        True,
        "one token at a time, on CPU (a candidate like the others; the baseline is the judge)",
    ),
    Capability(
        ("reference",),
        ANY,
        False,
        "the reference engine runs on CPU only: a device's cells are judged against the "
        "judge's CPU baseline through the torch and Triton engines",
    ),
    Capability(("torch",), ANY, True, "vectorised indexing on any torch device"),
    Capability(
        ("triton",),
        ("cpu",),
        True,
        "interpreted (TRITON_INTERPRET=1): tens of ms per write, "
        "so not in the default engine list; run it with --engine triton",
        opt_in=True,
    ),
    Capability(("triton",), ("cuda",), True, "compiled (NVIDIA or ROCm)"),
    Capability(
        ("triton",),
        ("npu", "xpu", "musa"),
        False,
        "no Triton backend is wired up for "
        "this device (triton-ascend, intel-xpu-backend, MUSA Triton)",
    ),
)


@dataclass(frozen=True)
class CellStatus:
    engine: str
    pool: str
    dtype: str
    layout: str
    device: str
    status: str  # checked | opt-in | skipped
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def capability(engine: str, pool: str, dtype: str, layout: str, device: str) -> Capability:
    for rule in CAPABILITIES:
        if rule.matches(engine, pool, dtype, layout, device):
            return rule
    return Capability(
        (engine,), (device,), False, f"no capability declared for engine {engine!r} on {device}"
    )


def engine_unavailable_reason(engine: str, device: str) -> Optional[str]:
    """Why an engine cannot run on `device` in this process, without importing its kernels."""
    if engine != "triton":
        return None
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    from pools.builtin.engines.triton_mode import interprets

    if device == "cpu" and not interprets(os.environ, torch.cuda.is_available()):
        return "Triton kernels are compiled in this process; CPU needs TRITON_INTERPRET=1"
    return None


def cell_status(
    engine: str,
    pool: str,
    dtype: str,
    layout: str,
    device: str,
    device_reason: Optional[str] = None,
) -> CellStatus:
    """`device_reason`: why the device is absent (None: present), from harness.plan.devices."""
    rule = capability(engine, pool, dtype, layout, device)
    if not rule.supported:
        return CellStatus(engine, pool, dtype, layout, device, "skipped", rule.reason)
    why_not = device_reason or engine_unavailable_reason(engine, device)
    if why_not:
        status, reason = "skipped", why_not
    else:
        status, reason = ("opt-in" if rule.opt_in else "checked"), rule.reason
    return CellStatus(engine, pool, dtype, layout, device, status, reason)


def matrix(device_reasons: Optional[dict[str, Optional[str]]] = None) -> list[CellStatus]:
    """Every cell, for the devices declared in harness.plan.devices."""
    if device_reasons is None:
        device_reasons = {name: unavailable_reason(name) for name in DEVICE_TYPES}
    return [
        cell_status(engine, pool, dtype, layout, device, device_reasons[device])
        for engine in ENGINES
        for device in device_reasons
        for pool in POOL_KINDS
        for layout in (layout_of(pool),)
        for dtype in DTYPES
    ]
