"""The capability matrix drives the run's skips and `kvh matrix` prints and saves it."""
from __future__ import annotations

import json
import re

from backends.registry import BACKENDS
from harness.capabilities import cell_status, matrix
from harness.cli import main
from harness.plan import RunOptions, SutChoice, candidates_for
from tests.conftest import run_kvh


def test_absent_devices_are_skipped_with_reasons_and_cpu_is_checked():
    reasons = {"cpu": None, "cuda": "no CUDA device", "npu": "no NPU", "xpu": "no XPU", "musa": "no MUSA"}
    cells = matrix(reasons)
    torch_nhd = {c.device: c for c in cells if c.engine == "torch" and c.layout == "nhd"}
    assert torch_nhd["cpu"].status == "checked"
    for device in ("cuda", "npu", "xpu", "musa"):
        assert torch_nhd[device].status == "skipped" and torch_nhd[device].reason == reasons[device]
    assert cell_status("triton", "mha", "bf16", "nhd", "npu").status == "skipped"
    assert cell_status("torch", "mha_hnd", "bf16", "hnd", "cpu").status == "checked"
    assert cell_status("triton", "npu_mha", "bf16", "npu", "cpu").status == "skipped"
    assert cell_status("reference", "mha", "bf16", "nhd", "cuda").reason.startswith("the reference engine")


def test_plan_consults_the_matrix():
    plain = BACKENDS["plain"]
    builtin = SutChoice("builtin", ("reference", "torch", "triton"))
    default = list(candidates_for(plain, "extend", [builtin], RunOptions(device="cpu")))
    assert {item.engine for item in default} == {"reference", "torch"}      # triton is opt-in on CPU
    named = list(candidates_for(plain, "extend", [SutChoice("builtin", ("triton",))],
                                RunOptions(device="cpu", engines=["triton"], engines_named=True)))
    assert {item.engine for item in named} == {"triton"} and all(hasattr(i, "module") for i in named)


def test_kvh_matrix_prints_both_views_and_writes_json(tmp_path):
    out = tmp_path / "matrix.json"
    result = run_kvh("matrix", "--out", str(out))
    assert result.returncode == 0, result.stderr
    def row(*cells: str) -> str:   # a table row starting with these cells, whatever the padding
        return r"^\|" + r"\|".join(rf" +{re.escape(cell)} *" for cell in cells)

    for device in ("cuda", "npu", "xpu", "musa"):
        assert re.search(row(device, "skipped", "no "), result.stdout, re.MULTILINE)
    assert re.search(row("cpu", "checked "), result.stdout, re.MULTILINE) and "## Backends" in result.stdout
    payload = json.loads(out.read_text())
    assert {d["name"] for d in payload["devices"]} >= {"cpu", "cuda", "npu", "xpu", "musa"}
    assert {b["backend"] for b in payload["backends"]} == set(BACKENDS)
    assert any(c["engine"] == "triton" and c["status"] == "opt-in" for c in payload["engines"])
    assert not list(tmp_path.glob("*.tmp"))
    assert main(["matrix", "--out", str(tmp_path)]) == 2              # a folder is not a JSON file
