"""Sharding the suite: `--shard i/N` partitions the runner's cells deterministically, results of
separate workers (pytest-xdist, or shards on other machines) merge in `kvh report`, and xdist
workers pin distinct devices."""
from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from harness.cli import main as kvh
from harness.plan import RunOptions
from harness.runner import _groups, cells_of
from harness.sharding import Shard, in_shard, parse_shard, partition, shard_of
from reports.store import append, load, run_meta
from tests.conftest import REPO
from tests.xdist_devices import worker_device, worker_index


def _cell_keys(options: RunOptions) -> list[str]:
    return [cell.key for pool, dtype in _groups(options) for cell in cells_of(options, pool, dtype)]


def test_three_shards_cover_the_unsharded_cells_exactly_once():
    every = _cell_keys(RunOptions())
    assert len(every) == len(set(every)) > 50
    shards = [[key for key in every if in_shard(key, Shard(index, 3))] for index in (1, 2, 3)]
    assert sorted(key for shard in shards for key in shard) == sorted(every)
    assert all(shards)                                   # no empty shard on the default matrix
    assert partition(every, 3) == shards
    assert [key for key in every if in_shard(key, None)] == every


def test_shard_assignment_is_stable_across_processes_and_hash_seeds():
    keys = _cell_keys(RunOptions())[:20]
    code = "import sys; from harness.sharding import shard_of; print([shard_of(k, 5) for k in sys.argv[1:]])"
    child = subprocess.run([sys.executable, "-c", code, *keys], cwd=REPO, capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    assert child.stdout.strip() == str([shard_of(key, 5) for key in keys])


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""])
def test_bad_shards_are_one_line_value_errors(text):
    with pytest.raises(ValueError, match=r"expected i/N with 1 <= i <= N") as error:
        parse_shard(text)
    assert "\n" not in str(error.value)


def test_parse_shard_round_trips():
    assert parse_shard("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"


def _check_rows(backend: str) -> pd.DataFrame:
    return pd.DataFrame([{"backend": backend, "pool": "mha", "dtype": "bf16", "sut": "builtin",
                          "engine": "torch", "era": era, "scenario": "small", "outcome": "pass",
                          "findings": 0} for era in ("legacy", "current")])


def test_per_worker_results_files_merge_in_kvh_report(tmp_path, capsys, monkeypatch):
    """Two xdist workers (and a shard from another machine, in a subfolder) append to the store;
    each writes its own file and `kvh report` reads them all as one run."""
    script = ("import sys, pandas as pd; from reports.store import append, run_meta; "
              "from tests.test_sharding import _check_rows; "
              "append(sys.argv[1], _check_rows(sys.argv[2]), 'check', run_meta('cpu', 0, run_id='night'))")
    for worker, backend in (("gw0", "plain"), ("gw1", "fa3")):
        subprocess.run([sys.executable, "-c", script, str(tmp_path), backend], cwd=REPO, check=True,
                       env={**os.environ, "PYTEST_XDIST_WORKER": worker}, timeout=120)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)      # a plain run on another machine
    append(tmp_path / "shard-2", _check_rows("triton"), "check", run_meta("cpu", 0, run_id="night"))
    assert len(list(tmp_path.rglob("*.parquet"))) == 3
    checks = load(tmp_path).of("check")
    assert sorted(set(checks["backend"])) == ["fa3", "plain", "triton"] and len(checks) == 6
    assert {writer.rsplit(":", 1)[1] for writer in checks["writer"]} == {"gw0", "gw1", ""}
    assert kvh(["report", str(tmp_path)]) == 0
    assert "0 correctness findings in 6 checks (6 passed)" in capsys.readouterr().out


@pytest.mark.parametrize("worker, count, device", [
    ("gw0", 2, "cuda:0"), ("gw1", 2, "cuda:1"), ("gw3", 2, "cuda:1"), ("gw5", 4, "cuda:1"),
    ("gw2", 1, None), ("master", 4, None), ("", 4, None)])
def test_xdist_workers_pin_distinct_devices(worker, count, device):
    environ = {"PYTEST_XDIST_WORKER": worker} if worker else {}
    assert worker_device("cuda", count, environ) == device
    assert worker_index(environ) == (int(worker[2:]) if worker.startswith("gw") else None)
