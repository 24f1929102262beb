"""`kvh run --engine triton` end to end, in a subprocess (interpreted on CPU): zero findings on
every pool kind and dtype, and a skip with the matrix's reason for what Triton does not cover."""

from __future__ import annotations

import json

import pytest

from pools.dtypes import DTYPES
from scenarios.model import POOL_KINDS
from scenarios.serialize import to_dict
from tests.conftest import check_records, run_kvh, scenario_named


def _small_scaled(pool: str, dtype: str) -> dict:
    """The builtin scaled scenario cut to two layers (one of them SWA on SWA pools, linear
    attention on hybrid linear pools, both sparse on MiniMax sparse pools)."""
    scenario = scenario_named(pool, dtype, "scaled-tensor")
    g = scenario.geometry
    g.layer_num = 2
    g.swa_layer_ids = [1] if g.kind.swa else []
    g.linear_layer_ids = [0] if g.kind.linear_layers else []
    g.sparse_layer_ids, g.k_only_layer_ids = ([0, 1], [1]) if g.kind.sparse_index else ([], [])
    return to_dict(scenario)


@pytest.mark.slow
def test_kvh_run_engine_triton_has_zero_findings_on_every_pool_kind_and_dtype(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # interpreted even on a GPU machine
    files = []
    for pool in POOL_KINDS:
        for dtype in DTYPES:
            path = tmp_path / f"{pool}-{dtype}.json"
            path.write_text(json.dumps(_small_scaled(pool, dtype)))
            files += ["--scenario", str(path)]
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        "--engine",
        "triton",
        "--era",
        "current",
        "--backend",
        "plain,plain_mla,minimax_sparse,dsa,qsa,dsv4_indexer,retraction_restore",
        *files,
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    frame = check_records(out)
    model = frame["sut"] == "model"  # the era table: the baseline's current era vs legacy
    assert set(frame[model]["era"]) == {"current"} and set(frame[model]["outcome"]) == {"pass"}
    ran = frame[(frame["outcome"] != "skipped") & ~model]
    assert set(ran["engine"]) == {"triton"} and set(ran["outcome"]) == {"pass"}
    assert set(ran["pool"]) >= {"mha", "mla", "swa_mha", "swa_mla", "mha_hnd"}
    assert set(ran[ran["pool"] == "mha"]["dtype"]) == set(DTYPES)
    # What Triton does not cover (FP4, NPU and 5-D layouts) is a skip carrying the matrix's reason.
    skipped = frame[frame["outcome"] == "skipped"]
    assert len(skipped) and (skipped["detail"].str.len() > 0).all()
