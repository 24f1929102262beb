"""`kvh run --jobs 2` checks what one process checks, and a finding in any job is the run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_kvh

pytestmark = pytest.mark.e2e


def _verdict_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(("PASS", "FAIL")))


def test_two_jobs_check_exactly_what_one_process_checks(tmp_path):
    flags = ("--pool", "mha", "--dtype", "bf16", "--backend", "plain,fa3,triton")
    one = run_kvh("run", *flags, "--out", str(tmp_path / "one"))
    two = run_kvh("run", *flags, "--jobs", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == two.returncode == 0, two.stderr[-2000:]
    assert _verdict_line(one.stdout) == _verdict_line(two.stdout)
    assert "[job 1/2] " in two.stderr and "[job 2/2] " in two.stderr
    assert "## The 2 jobs" in (tmp_path / "two" / "summary.md").read_text()


def test_a_finding_in_one_job_fails_the_run_and_names_its_repro(tmp_path):
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        "--sut",
        str(FIXTURES / "stray_neighbour.py"),
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--jobs",
        "2",
        "--junit",
        str(tmp_path / "run.xml"),
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    finding = next(line for line in result.stdout.splitlines() if line.startswith("FINDING"))
    repro = finding.rsplit("(repro: ", 1)[1].rstrip(")")
    assert (out / "jobs").is_dir() and Path(repro).is_file()
    assert "<failure" in (tmp_path / "run.xml").read_text()


def test_an_exploring_run_draws_the_same_scenarios_with_one_job_or_two(tmp_path):
    """Each cell's draws depend on the seed and the cell alone: with the budget out of play (the
    floor of 3 examples), one process and two jobs check the same scenarios with the same
    outcomes, down to the features and the largest slot each cell's scenarios reached."""
    from reports.store import load

    flags = ("--pool", "mha,swa_mha", "--dtype", "bf16", "--backend", "plain")
    flags += ("--profile", "ci", "--examples", "3", "--seed", "7")
    one = run_kvh("run", *flags, "--out", str(tmp_path / "one"))
    two = run_kvh("run", *flags, "--jobs", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == two.returncode == 0, two.stderr[-2000:]
    assert _verdict_line(one.stdout) == _verdict_line(two.stdout)

    def checked(folder: str) -> list:
        records = load(tmp_path / folder).of("check")
        cell = ["pool", "backend", "mode", "sut", "era", "engine", "scenario", "outcome"]
        return sorted(records[cell + ["detail"]].fillna("").itertuples(index=False))

    def covered(folder: str) -> list:
        records = load(tmp_path / folder).of("coverage")
        cell = ["pool", "backend", "mode", "feature", "scenarios", "max_slot"]
        return sorted(records[cell].itertuples(index=False))

    assert checked("one") == checked("two")
    assert covered("one") == covered("two")
