"""Device discovery: every declared device is either usable or skipped with a reason, never an
error, and each backend's natural device comes from the backend registry."""

from __future__ import annotations

import sys

import pytest

from backends.registry import BACKENDS
from harness.plan.candidates import candidates_for
from harness.plan.devices import (
    DEVICE_TYPES,
    backend_device_reason,
    discover,
    natural_device,
    unavailable_reason,
)
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice

# Answers differently on a machine with a CUDA device or an NPU: run there too (tox -e gpu, npu).
pytestmark = [pytest.mark.gpu, pytest.mark.npu]


def test_every_declared_device_is_available_or_has_a_reason():
    statuses = {status.name: status for status in discover()}
    assert set(statuses) == {"cpu", "cuda", "npu", "xpu", "musa"} == set(DEVICE_TYPES)
    assert statuses["cpu"].available
    for status in statuses.values():
        assert status.available == (status.reason == "")
        assert status.available == (unavailable_reason(status.name) is None)


def test_a_vendor_module_that_fails_to_import_is_a_reason(tmp_path, monkeypatch):
    # Only `tmp_path` on the import path: there torch_npu is broken and torch_musa is absent,
    # whatever this machine has installed.
    (tmp_path / "torch_npu.py").write_text("raise ImportError('driver mismatch')\n")
    for vendor in ("torch_npu", "torch_musa"):
        monkeypatch.delitem(sys.modules, vendor, raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert "driver mismatch" in unavailable_reason("npu")
    assert "not installed" in unavailable_reason("musa")


def test_unknown_device_is_a_value_error():
    with pytest.raises(ValueError, match="unknown device"):
        unavailable_reason("tpu")


def test_natural_device_comes_from_the_backend_registry():
    assert natural_device("any") == "cpu" and natural_device("rocm") == "cuda"
    for backend in BACKENDS.values():
        reason = backend_device_reason(backend.device_type)
        assert reason is None or isinstance(reason, str) and reason


def test_absent_natural_device_falls_back_to_cpu_and_an_explicit_one_is_a_skip():
    absent = next((b for b in BACKENDS.values() if backend_device_reason(b.device_type)), None)
    if absent is None:
        pytest.skip("every backend's natural device is present on this machine")
    suts = [SutChoice("builtin", ("torch",))]
    # A call site's logic is the same on every device, so it is still checked here, on CPU.
    fallback = list(
        candidates_for(absent, absent.modes[0], suts, RunOptions(device=None, engines=["torch"]))
    )
    assert fallback and all(getattr(item, "device", "") == "cpu" for item in fallback)
    # Naming the absent device makes every candidate a skip carrying the device's reason.
    device = natural_device(absent.device_type)
    named = list(
        candidates_for(absent, absent.modes[0], suts, RunOptions(device=device, engines=["torch"]))
    )
    assert named and all(
        getattr(item, "reason", "") == backend_device_reason(absent.device_type) for item in named
    )
