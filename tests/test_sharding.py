"""Sharding (harness/plan/sharding.py): `--shard i/N` partitions the runner's cells
deterministically, and results of separate workers (pytest-xdist, or shards on other machines)
merge in `kvh report`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.cli import main as kvh
from harness.plan.run_options import RunOptions
from harness.plan.sharding import Shard, in_shard, parse_shard, partition, shard_of
from harness.run.cells import cells_of
from reports.store import append, load, run_meta
from tests.conftest import REPO
from tests.helpers.results import check_rows


def _cell_keys(options: RunOptions) -> list[str]:
    # Without user scenarios the runner's (pool, dtype) groups are the options' product.
    return [
        cell.key
        for pool in options.pools
        for dtype in options.dtypes
        for cell in cells_of(options, pool, dtype)
    ]


def test_three_shards_cover_the_unsharded_cells_exactly_once():
    every = _cell_keys(RunOptions())
    assert len(every) == len(set(every)) > 50
    shards = [[key for key in every if in_shard(key, Shard(index, 3))] for index in (1, 2, 3)]
    assert sorted(key for shard in shards for key in shard) == sorted(every)
    assert all(shards)  # no empty shard on the default matrix
    assert partition(every, 3) == shards
    assert [key for key in every if in_shard(key, None)] == every


def test_shard_assignment_is_stable_across_processes_and_hash_seeds():
    keys = _cell_keys(RunOptions())[:20]
    code = (
        "import sys; from harness.plan.sharding import shard_of; "
        "print([shard_of(k, 5) for k in sys.argv[1:]])"
    )
    child = subprocess.run(
        [sys.executable, "-c", code, *keys],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        check=True,
    )
    assert child.stdout.strip() == str([shard_of(key, 5) for key in keys])


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""])
def test_bad_shards_are_one_line_value_errors(text):
    with pytest.raises(ValueError, match=r"expected i/N with 1 <= i <= N") as error:
        parse_shard(text)
    assert "\n" not in str(error.value)


def test_parse_shard_round_trips():
    assert parse_shard("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"


def test_per_worker_results_files_merge_in_kvh_report(tmp_path, capsys, monkeypatch):
    """Two xdist workers (and a shard from another machine, in a subfolder) append to the store;
    each writes its own file and `kvh report` reads them all as one run."""
    script = (
        "import sys, pandas as pd; from reports.store import append, run_meta; "
        "from tests.helpers.results import check_rows; "
        "append(sys.argv[1], check_rows(sys.argv[2]), 'check', run_meta('cpu', 0, run_id='night'))"
    )
    for worker, backend in (("gw0", "plain"), ("gw1", "fa3")):
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path), backend],
            cwd=REPO,
            check=True,
            env={**os.environ, "PYTEST_XDIST_WORKER": worker},
            timeout=120,
        )
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # a plain run on another machine
    append(tmp_path / "shard-2", check_rows("triton"), "check", run_meta("cpu", 0, run_id="night"))
    assert len(list(tmp_path.rglob("*.parquet"))) == 3
    checks = load(tmp_path).of("check")
    assert sorted(set(checks["backend"])) == ["fa3", "plain", "triton"] and len(checks) == 6
    assert {writer.rsplit(":", 1)[1] for writer in checks["writer"]} == {"gw0", "gw1", ""}
    assert kvh(["report", str(tmp_path)]) == 0
    assert "0 correctness findings in 6 checks (6 passed)" in capsys.readouterr().out
