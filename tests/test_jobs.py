"""`kvh run --jobs N`: children run shards that partition the parent's share, with every option
of the parent, and the parent's summary says what one process's says of the same cells."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.cli import build_parser
from harness.cli import main as kvh
from harness.cli.job_records import Job, merged_run, stored_files
from harness.cli.jobs import PARENT_ONLY, _report, _worst, child_arguments, child_shard
from harness.cli.run import child_options
from harness.plan.run_options import RunOptions
from harness.plan.sharding import Shard, shard_of
from harness.report.run_summary import StoredRun
from reports.records import records_frame
from reports.store import append, run_meta
from tests.conftest import FIXTURES

KEYS = [f"pool{p}/dtype{d}/backend{b}:extend" for p in range(5) for d in range(4) for b in range(9)]
ROW = {
    "sut": "builtin", "device": "cpu", "backend": "plain", "mode": "extend", "pool": "mha",
    "era": "legacy", "engine": "torch", "dtype": "bf16", "scenario": "prefill", "tokens": 1,
    "outcome": "pass", "findings": 0, "divergence": "", "divergence_pr": "",
    "divergence_evidence": "", "write_ns": 0, "bytes_moved": None, "detail": "",
    "repro": None, "label": "builtin/legacy/torch/plain:extend@cpu", "reproduce": "",
}  # fmt: skip


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
            "--junit", "j.xml", "--scenario", "s.json", "--shard", "1/2",
        ]
    )  # fmt: skip
    argv = child_arguments(child_options(parent), Shard(2, 3), Path("o/jobs/job-2"))
    child = parser.parse_args(argv)
    assert (child.shard, child.out, child.jobs, child.junit) == (
        "2/3",
        Path("o/jobs/job-2"),
        1,
        None,
    )
    for name, value in vars(parent).items():
        if name not in PARENT_ONLY:
            assert getattr(child, name) == value, name


def test_a_child_of_a_parent_given_only_defaults_gets_no_option_but_its_own():
    parent = build_parser().parse_args(["run", "--jobs", "2"])
    assert child_options(parent) == []


def test_the_worst_child_decides_the_exit_code():
    assert _worst([0, 0]) == 0
    assert _worst([0, 1]) == 1
    assert _worst([1, 2]) == 2  # a usage error is not hidden by findings
    assert _worst([2, 3, 1]) == 3
    assert _worst([0, -9]) == 3  # killed by a signal (an out-of-memory kill, say)


def test_a_child_that_died_makes_the_run_incomplete_never_a_pass(tmp_path, capsys):
    jobs = [Job(1, tmp_path / "jobs" / "job-1", 0), Job(2, tmp_path / "jobs" / "job-2", -9)]
    rows = records_frame("check", [dict(ROW)]).assign(source=str(tmp_path / "x.parquet"))
    run = StoredRun(run_meta("cpu", 0), rows, records_frame("coverage", []))
    assert _report(RunOptions(out=tmp_path), jobs, run, []) == 3
    printed = capsys.readouterr().out
    assert "INCOMPLETE" in printed and "job 2 was killed by signal 9" in printed
    assert "PASS" not in printed


def test_only_what_a_child_wrote_in_this_run_joins_never_an_older_run(tmp_path):
    folders = [tmp_path / "job-1", tmp_path / "job-2"]
    meta = run_meta("cpu", 0, "x")
    for folder in folders:  # an older run, in both folders
        append(folder, records_frame("check", [dict(ROW, scenario="old")]), "check", meta)
    before = {folder: stored_files(folder) for folder in folders}
    # This run: job 1 wrote its records, job 2 was killed before it wrote any.
    append(folders[0], records_frame("check", [dict(ROW)]), "check", run_meta("cpu", 0, "x"))
    jobs = [
        Job(number, folder, code, stored_files(folder) - before[folder])
        for number, (folder, code) in enumerate(zip(folders, [0, -9]), start=1)
    ]
    assert [job.stored for job in jobs] == [True, False]
    run, _ = merged_run(jobs, RunOptions(backends=["plain"], pools=["mha"]), None)
    assert list(run.checks["scenario"]) == ["prefill"]
    assert set(run.checks["source"].str.contains("job-1")) == {True}


def _body(summary: str) -> str:
    """A summary less its first line (the run id) and a --jobs parent's section on its jobs."""
    return summary.split("\n", 1)[1].split("\n## The 2 jobs")[0].rstrip("\n")


@pytest.mark.slow
def test_two_jobs_summarise_the_run_as_one_process_does(tmp_path, capsys):
    """The era table, the skip lines (a SUT that did not load included), the SUTs not run and
    the coverage section: the --jobs parent reads them from its children's stores."""
    flags = ["run", "--sut", "builtin", "--sut", str(FIXTURES / "broken_import.py")]
    flags += ["--pool", "mha,swa_mha", "--dtype", "bf16", "--backend", "plain,fa3"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert kvh([*flags, "--out", str(one)]) == kvh([*flags, "--jobs", "2", "--out", str(two)]) == 2
    capsys.readouterr()
    alone, merged = ((folder / "summary.md").read_text() for folder in (one, two))
    for section in ("## SUTs not run", "## Known divergences", "## Skipped", "## Era table"):
        assert section in alone
    assert "## Coverage: scenario features exercised per cell" in alone
    assert "broken_import.py/-/-/fa3:decode mha/bf16" in alone  # a skip names its cell
    assert "## The 2 jobs" in merged
    assert _body(merged) == _body(alone)
    stored = pd.concat(pd.read_parquet(path) for path in two.glob("jobs/job-*/not-run-*.parquet"))
    assert set(stored["sut"]) == {str(FIXTURES / "broken_import.py")}
