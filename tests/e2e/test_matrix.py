"""`kvh matrix` end to end, in a subprocess: both views printed and the JSON saved."""

from __future__ import annotations

import json
import re

import pytest

from backends.registry import BACKENDS
from harness.cli import main
from harness.plan.devices import unavailable_reason
from tests.conftest import run_kvh

# The matrix shows what each device runs: checked on a GPU or NPU machine too (tox -e gpu, npu).
pytestmark = [pytest.mark.gpu, pytest.mark.npu]


@pytest.mark.slow
def test_kvh_matrix_prints_both_views_and_writes_json(tmp_path):
    out = tmp_path / "matrix.json"
    result = run_kvh("matrix", "--out", str(out))
    assert result.returncode == 0, result.stderr

    def row(*cells: str) -> str:  # a table row starting with these cells, whatever the padding
        return r"^\|" + r"\|".join(rf" +{re.escape(cell)} *" for cell in cells)

    for device in ("cuda", "npu", "xpu", "musa"):
        # An absent device is skipped with its reason; one this machine has is checked, as the CPU.
        shown = ("skipped", "no ") if unavailable_reason(device) else ("checked ",)
        assert re.search(row(device, *shown), result.stdout, re.MULTILINE)
    assert (
        re.search(row("cpu", "checked "), result.stdout, re.MULTILINE)
        and "## Backends" in result.stdout
    )
    payload = json.loads(out.read_text())
    assert {d["name"] for d in payload["devices"]} >= {"cpu", "cuda", "npu", "xpu", "musa"}
    assert {b["backend"] for b in payload["backends"]} == set(BACKENDS)
    assert any(c["engine"] == "triton" and c["status"] == "opt-in" for c in payload["engines"])
    # The bench's GPU-only timing paths are declared, with what they need.
    assert {p["path"] for p in payload["bench_timing"]} == {"cuda_graph", "cold_l2"}
    assert re.search(r"^\| cuda_graph +\| (yes|no: .+) +\| CUDA-graph", result.stdout, re.MULTILINE)
    assert not list(tmp_path.glob("*.tmp"))
    assert main(["matrix", "--out", str(tmp_path)]) == 2  # a folder is not a JSON file
