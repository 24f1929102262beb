"""`kvh run --engine triton` (interpreted on CPU) has zero findings on every pool kind and dtype,
and the GPU check's code path runs end to end with its CPU fallback."""
from __future__ import annotations

import json
import subprocess
import sys


from pools.dtypes import DTYPES
from scenarios.builtin import default_scenarios
from scenarios.model import POOL_KINDS
from scenarios.serialize import to_dict
from tests.conftest import REPO, check_records, run_kvh


def _small_scaled(pool: str, dtype: str) -> dict:
    """The builtin scaled scenario cut to two layers (one of them SWA on SWA pools)."""
    scenario = next(s for s in default_scenarios(pool, dtype, 0) if s.name == "scaled-tensor")
    g = scenario.geometry
    g.layer_num = 2
    g.swa_layer_ids = [1] if g.is_swa else []
    return to_dict(scenario)


def test_kvh_run_engine_triton_has_zero_findings_on_every_pool_kind_and_dtype(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")     # interpreted even on a GPU machine
    files = []
    for pool in POOL_KINDS:
        for dtype in DTYPES:
            path = tmp_path / f"{pool}-{dtype}.json"
            path.write_text(json.dumps(_small_scaled(pool, dtype)))
            files += ["--scenario", str(path)]
    out = tmp_path / "out"
    result = run_kvh("run", "--engine", "triton", "--era", "current", "--backend", "plain,plain_mla",
                     *files, "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    frame = check_records(out)
    model = frame["sut"] == "model"     # the era table: the baseline's current era vs legacy
    assert set(frame[model]["era"]) == {"current"} and set(frame[model]["outcome"]) == {"pass"}
    ran = frame[(frame["outcome"] != "skipped") & ~model]
    assert set(ran["engine"]) == {"triton"} and set(ran["outcome"]) == {"pass"}
    assert set(ran["pool"]) >= {"mha", "mla", "swa_mha", "swa_mla", "mha_hnd"}
    assert set(ran[ran["pool"] == "mha"]["dtype"]) == set(DTYPES)
    # What Triton does not cover (FP4, NPU and 5-D layouts) is a skip carrying the matrix's reason.
    skipped = frame[frame["outcome"] == "skipped"]
    assert len(skipped) and (skipped["detail"].str.len() > 0).all()


def test_gpu_check_cpu_fallback_writes_a_passing_results_file(tmp_path):
    out = tmp_path / "gpu_check.json"
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--cpu-interpret",
                             "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    payload = json.loads(out.read_text())
    assert payload["passed"] and payload["device"] == "cpu"
    assert {rule["scale"] for rule in payload["division_rules"]} == {"float", "tensor", "param"}
    assert {cell["pool"] for cell in payload["scenarios"]} == {"mha", "mla"}
    assert all(cell["ok"] for cell in payload["scenarios"])
