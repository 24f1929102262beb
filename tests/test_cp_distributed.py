"""The CP write under torch.distributed (gloo ranks on CPU): every rank's pool equals the
single-process write; planted faults are caught on every rank with the rank named, saved as
repro files and replayed; a rank that dies or hangs ends the group with nothing left running."""

from __future__ import annotations

import json

import psutil
import pytest

from harness.cli import main as kvh
from harness.cp import distributed
from harness.cp.cp_repro import load_cp_repro
from harness.cp.differential import CP_POOLS, default_plan, run_group
from pools.builtin.eras import ERAS
from reports.outcome import Outcome
from tests.conftest import FIXTURES

SITE = {
    name: str(FIXTURES / f"cp_{name}.py")
    for name in ("no_restore", "swa_dropped", "rank_dies", "rank_hangs")
}


@pytest.fixture
def no_leftover_ranks(monkeypatch):
    """Every rank process a test launched has ended when the launch returns."""
    launched, launch = [], distributed.launch

    def recording(*args, **kwargs):
        outcome = launch(*args, **kwargs)
        launched.extend(
            pid
            for pid in outcome.pids
            if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        )
        return outcome

    monkeypatch.setattr("harness.cp.differential.launch", recording)
    yield
    assert launched == []


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_writes_what_one_process_writes(world, no_leftover_ranks):
    plan = default_plan()
    outcome, checks = run_group(plan, world)
    assert outcome.ok, [failure.line() for failure in outcome.failures]
    assert {check.scenario.geometry.pool for check in checks} == set(CP_POOLS)
    names = {check.scenario.name for check in checks}
    assert {"small-narrowed", "small-cross"} <= names  # padding and cross-attention
    assert len(checks) == world * len(plan.scenarios) * len(ERAS)
    assert {check.outcome for check in checks} <= {Outcome.PASS, Outcome.KNOWN_DIVERGENCE}
    # The one known divergence: kwarg/bundled SWA writes of a narrowed forward (PR #29460),
    # found identically on every rank.
    diverging = {(c.rank, c.scenario.name, c.candidate["era"]) for c in checks if c.divergence}
    assert diverging == {
        (rank, "small-narrowed", era) for rank in range(world) for era in ("kwarg", "bundled")
    }


@pytest.mark.slow
@pytest.mark.distributed
def test_unrestored_zigzag_order_is_found_on_every_rank_and_replays(
    tmp_path, capsys, no_leftover_ranks
):
    code = kvh(
        [
            "cp",
            "--world",
            "2",
            "--pools",
            "mha",
            "--eras",
            "legacy,current",
            "--site",
            SITE["no_restore"],
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    for rank in range(2):
        assert f"rank {rank}/2 `small-scaled` (mha): [bytes] written bytes differ" in out
    repros = sorted((tmp_path / "repros").glob("cp2-mha-legacy-torch-small-scaled-*.json"))
    assert len(repros) == 1
    plan, world, payload = load_cp_repro(repros[0])
    assert world == 2 and payload["ranks"] == [0, 1] and plan.site == SITE["no_restore"]
    assert {f["candidate"].rsplit(" rank ", 1)[1] for f in payload["findings"]} == {"0/2", "1/2"}
    assert kvh(["report", str(tmp_path)]) == 1  # the store has the finding
    assert "cp_dist_w2" in capsys.readouterr().out
    assert kvh(["repro", str(repros[0])]) == 1  # still reproduces
    replay = capsys.readouterr().out
    assert "replayed" in replay and "rank 1/2 `small-scaled` (mha): [bytes]" in replay
    fixed = json.loads(repros[0].read_text())
    fixed["site"] = "backends.cp_distributed"
    (tmp_path / "fixed.json").write_text(json.dumps(fixed))
    assert kvh(["cp", "--repro", str(tmp_path / "fixed.json")]) == 0


@pytest.mark.slow
@pytest.mark.distributed
def test_swa_loc_dropped_on_the_gathered_write_names_each_rank(no_leftover_ranks):
    plan = default_plan(("swa_mha",), eras=("legacy", "kwarg"), site=SITE["swa_dropped"])
    outcome, checks = run_group(plan, 2)
    assert outcome.ok
    failed = [check for check in checks if check.outcome is Outcome.FINDING]
    # legacy pools translate the loc themselves; kwarg needs swa_loc on the SWA layer (layer 1).
    assert {check.candidate["era"] for check in failed} == {"kwarg"}
    assert {check.rank for check in failed} == {0, 1}
    for check in failed:
        finding = check.findings[0]
        assert finding.oracle == "exception" and finding.written_by == "forward 0, layer 1"
        assert finding.candidate.endswith(f"rank {check.rank}/2")


@pytest.mark.slow
@pytest.mark.distributed
def test_a_dying_rank_ends_the_group_and_is_named(no_leftover_ranks):
    outcome, checks = run_group(
        default_plan(("mha",), eras=("legacy",), site=SITE["rank_dies"]), 2, timeout_s=60
    )
    reasons = {failure.rank: failure.reason for failure in outcome.failures}
    assert reasons[1] == "exited with code 3 without reporting a result"
    assert checks == [] and not outcome.ok


@pytest.mark.slow
@pytest.mark.distributed
def test_a_hanging_rank_times_out_the_group_and_is_named(no_leftover_ranks):
    outcome, checks = run_group(
        default_plan(("mha",), eras=("legacy",), site=SITE["rank_hangs"]),
        2,
        timeout_s=90,
        collective_timeout_s=5,
    )
    reasons = {failure.rank: failure.reason for failure in outcome.failures}
    # Rank 0 gave up waiting in the gather; rank 1 never got there and had to be stopped.
    assert reasons[0].startswith("raised CollectiveFailed: all_gather on rank 0")
    assert reasons[1].startswith("still running") and reasons[1].endswith("terminated")
    assert checks == []


def test_bad_cp_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert kvh(["cp", "--pools", "swa_mla"]) == 2
    assert kvh(["cp", "--site", str(tmp_path / "missing.py")]) == 2
    (tmp_path / "other.json").write_text('{"format": "something"}')
    assert kvh(["cp", "--repro", str(tmp_path / "other.json")]) == 2
    assert kvh(["cp", "--sut", f"sglang@{tmp_path / 'nothing'}"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 4 and all(line.startswith("kvh: error: ") for line in errors)
    assert "holds no sglang/ package" in errors[3] or "does not exist" in errors[3]
