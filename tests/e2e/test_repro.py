"""`kvh repro` end to end, in a subprocess: a repro file replayed against a fixed pool."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_kvh


@pytest.mark.slow
def test_repro_of_a_fixed_pool_is_not_reproduced(tmp_path, fixture_sut):
    out = tmp_path / "out"
    run_kvh(
        "run",
        "--sut",
        fixture_sut("scale_ignored"),
        "--pool",
        "mha",
        "--dtype",
        "fp16",
        "--out",
        str(out),
    )
    repro = sorted((out / "repros").glob("*.json"))[0]
    payload = json.loads(repro.read_text())
    payload["candidate"]["sut"] = "builtin"
    payload["candidate"]["engine"] = "torch"
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(payload))
    replay = run_kvh("repro", str(fixed))
    assert replay.returncode == 0 and "not reproduced" in replay.stdout
