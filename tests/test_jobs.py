"""`kvh run --jobs N`: children run shards that partition the parent's share, with every option
of the parent."""

from __future__ import annotations

from pathlib import Path

from harness.cli import build_parser
from harness.cli.jobs import PARENT_ONLY, _worst, child_arguments, child_shard
from harness.plan.sharding import Shard, shard_of

KEYS = [f"pool{p}/dtype{d}/backend{b}:extend" for p in range(5) for d in range(4) for b in range(9)]


def test_the_jobs_of_a_shard_partition_exactly_that_shard():
    for outer in (None, Shard(2, 3)):
        owned = [k for k in KEYS if outer is None or shard_of(k, outer.count) == outer.index]
        jobs = [child_shard(outer, job, 4) for job in (1, 2, 3, 4)]
        per_job = [[k for k in KEYS if shard_of(k, j.count) == j.index] for j in jobs]
        assert sorted(sum(per_job, [])) == sorted(owned)
        assert all(per_job)  # 180 cells over 4 jobs: none is empty


def test_a_child_gets_every_option_of_the_parent_but_its_own_shard_and_folder():
    parser = build_parser()
    parent = parser.parse_args(
        [
            "run", "--sut", "builtin:torch", "--sut", "x.py", "--pool", "mha,mla",
            "--dtype", "bf16", "--era", "kwarg", "--engine", "torch", "--backend", "fa3",
            "--device", "cpu", "--seed", "7", "--examples", "3", "--profile", "dev",
            "--special-values", "--timeout", "2.5", "--jobs", "3", "--out", "o",
            "--junit", "j.xml", "--scenario", "s.json",
        ]
    )  # fmt: skip
    child = parser.parse_args(child_arguments(parent, Shard(2, 3), Path("o/jobs/job-2")))
    assert (child.shard, child.out, child.jobs, child.junit) == (
        "2/3",
        Path("o/jobs/job-2"),
        1,
        None,
    )
    for name, value in vars(parent).items():
        if name not in PARENT_ONLY:
            assert getattr(child, name) == value, name


def test_the_worst_child_decides_the_exit_code():
    assert _worst([0, 0]) == 0
    assert _worst([0, 1]) == 1
    assert _worst([1, 2]) == 2  # a usage error is not hidden by findings
    assert _worst([2, 3, 1]) == 3
    assert _worst([0, -9]) == 3  # killed by a signal (an out-of-memory kill, say)


def test_a_child_that_died_makes_the_run_incomplete_never_a_pass(tmp_path, capsys):
    import argparse

    import pandas as pd

    from harness.cli.jobs import _report

    folders = [tmp_path / "jobs" / f"job-{job}" for job in (1, 2)]
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / "stdout.txt").write_text("")
    rows = pd.DataFrame(
        [{"sut": "builtin", "era": "legacy", "engine": "torch", "backend": "plain",
          "mode": "extend", "pool": "mha", "dtype": "bf16", "outcome": "pass",
          "scenario": "prefill", "detail": "", "repro": None, "source": "x"}]
    )  # fmt: skip
    arguments = argparse.Namespace(out=tmp_path, junit=None, device=None, seed=0, profile=None)
    assert _report(arguments, folders, [0, -9], rows, []) == 3
    printed = capsys.readouterr().out
    assert "INCOMPLETE" in printed and "job 2 was killed by signal 9" in printed
    assert "PASS" not in printed


def test_a_failed_childs_folder_is_not_read_so_an_older_run_never_joins(tmp_path):
    from harness.cli.jobs import _newest_rows
    from reports.records import records_frame
    from reports.store import append, run_meta

    row = {
        "sut": "builtin", "device": "cpu", "backend": "plain", "mode": "extend", "pool": "mha",
        "era": "legacy", "engine": "torch", "dtype": "bf16", "scenario": "prefill", "tokens": 1,
        "outcome": "pass", "findings": 0, "divergence": "", "divergence_pr": "",
        "divergence_evidence": "", "write_ns": 0, "bytes_moved": None, "detail": "",
        "repro": None,
    }  # fmt: skip
    folders = [tmp_path / "job-1", tmp_path / "job-2"]
    for folder in folders:
        append(folder, records_frame("check", [dict(row)]), "check", run_meta("cpu", 0, "x"))
    rows, _ = _newest_rows(folders, [0, -9])
    assert len(rows) == 1 and set(rows["source"].str.contains("job-1")) == {True}
