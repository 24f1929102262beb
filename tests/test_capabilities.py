"""The capability matrix (harness/plan/engine_matrix.py) drives the run's skips and the plan."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.plan.candidates import candidates_for
from harness.plan.engine_matrix import cell_status, matrix
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice

# The matrix decides what each device runs: checked on a GPU or NPU machine too (tox -e gpu, npu).
pytestmark = [pytest.mark.gpu, pytest.mark.npu]


def test_absent_devices_are_skipped_with_reasons_and_cpu_is_checked():
    reasons = {
        "cpu": None,
        "cuda": "no CUDA device",
        "npu": "no NPU",
        "xpu": "no XPU",
        "musa": "no MUSA",
    }
    cells = matrix(reasons)
    torch_nhd = {c.device: c for c in cells if c.engine == "torch" and c.layout == "nhd"}
    assert torch_nhd["cpu"].status == "checked"
    for device in ("cuda", "npu", "xpu", "musa"):
        assert torch_nhd[device].status == "skipped" and torch_nhd[device].reason == reasons[device]
    assert cell_status("triton", "mha", "bf16", "nhd", "npu").status == "skipped"
    assert cell_status("torch", "mha_hnd", "bf16", "hnd", "cpu").status == "checked"
    assert cell_status("triton", "npu_mha", "bf16", "npu", "cpu").status == "skipped"
    assert cell_status("reference", "mha", "bf16", "nhd", "cuda").reason.startswith(
        "the reference engine"
    )


def test_plan_consults_the_matrix():
    plain = BACKENDS["plain"]
    builtin = SutChoice("builtin", ("reference", "torch", "triton"))
    default = list(candidates_for(plain, "extend", [builtin], RunOptions(device="cpu")))
    assert {item.engine for item in default} == {"reference", "torch"}  # triton is opt-in on CPU
    named = list(
        candidates_for(
            plain,
            "extend",
            [SutChoice("builtin", ("triton",))],
            RunOptions(device="cpu", engines=["triton"], engines_named=True),
        )
    )
    assert {item.engine for item in named} == {"triton"} and all(
        hasattr(i, "module") for i in named
    )
