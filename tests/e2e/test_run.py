"""`kvh run` end to end, in a subprocess: the default run, planted faults and their repro files,
a hanging SUT, a usage error from the real entry point, and a user's scenario file."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from reports.coverage_section import coverage_section, never_exercised
from scenarios.model import POOL_KINDS
from tests.conftest import check_records, run_kvh, scenario_file


@pytest.mark.slow
def test_default_run_passes_and_covers_every_era_pool_and_dtype(tmp_path):
    out = tmp_path / "out"
    result = run_kvh("run", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    frame = check_records(out)
    assert set(frame["era"]) == {"legacy", "kwarg", "bundled", "current"}
    assert set(frame["pool"]) == set(POOL_KINDS)
    assert set(frame["dtype"]) == {"bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2"}
    checks, model = frame[frame["sut"] != "model"], frame[frame["sut"] == "model"]
    # The judge is the baseline, so the builtin reference engine is a candidate like torch.
    assert set(checks["engine"]) == {"reference", "torch"} and set(model["engine"]) == {"judge"}
    assert (frame["outcome"] != "finding").all()
    # Every known divergence is a declared one; PR #29460's unsliced swa_loc shows in exactly
    # the two eras before it, in the era table and in the candidates that reproduce it.
    known = frame[frame["outcome"] == "known_divergence"]
    assert (known["divergence"] != "").all()
    unsliced = known[known["divergence"] == "unsliced-swa-loc"]
    assert set(unsliced["divergence_pr"]) == {"#29460"} and set(unsliced["era"]) == {
        "kwarg",
        "bundled",
    }
    assert set(unsliced["sut"]) == {"builtin", "model"}
    # Every skip is a row with its reason, and the counts printed add up to the rows.
    skipped = checks[checks["outcome"] == "skipped"]
    assert len(skipped) and (skipped["detail"].str.len() > 0).all()
    line = re.search(
        r"PASS: (\d+) checks: (\d+) passed, (\d+) with findings, (\d+) known "
        r"divergences, (\d+) both raised, (\d+) skipped, (\d+) unexplored; (\d+) left out by "
        r"design \(out of focus\), not counted",
        result.stdout,
    )
    # The checks add up to their outcomes; the rows a declared trim left out are said apart.
    assert line and int(line[1]) == sum(int(n) for n in line.groups()[1:7])
    apart = (checks["outcome"] == "skipped") & (checks["skip_kind"] == "by_design")
    assert int(line[8]) == int(apart.sum()) and int(line[1]) == len(checks) - int(apart.sum())
    # Issue 43: "skipped" is at most a quarter of the checks.
    assert int(line[6]) <= 0.25 * int(line[1]), line[0]
    assert f"era table: {len(model)} checks" in result.stdout
    summary = (out / "summary.md").read_text()
    assert summary.splitlines()[2].startswith("**PASS") and "#29460" in summary
    first_table = next(i for i, text in enumerate(summary.splitlines()) if text.startswith("|"))
    assert first_table <= 30 and "## Not checked" in "\n".join(summary.splitlines()[:first_table])
    assert "## Era table" in summary and "## Skipped" in summary and "no PR: diff of" in summary
    # Issue 46: every feature some cell can exercise, the default run does; both views say so.
    assert "Not exercised in any cell that can: none." in summary
    coverage = pd.concat(pd.read_parquet(path) for path in out.glob("coverage-*.parquet"))
    assert never_exercised(coverage) == []
    assert "Not exercised in any cell that can: none." in coverage_section(coverage)
    assert re.search(r"kvh: \[(\d+)/\1\] ", result.stderr)  # progress, to the last group
    assert not list(out.glob("**/*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, pool, oracle",
    [
        ("mla_no_unwrap", "mla", "exception"),
        ("swa_untranslated", "swa_mha", "exception"),
        ("copy_not_inplace", "mha", "caller_tensors"),
        ("stray_neighbour", "mha", "untouched"),
        ("scale_ignored", "mha", "bytes"),
    ],
)
def test_planted_fault_exits_1_and_its_repro_replays_the_same_finding(
    tmp_path, fixture_sut, fault, pool, oracle
):
    out = tmp_path / "out"
    result = run_kvh(
        "run", "--sut", fixture_sut(fault), "--pool", pool, "--dtype", "bf16", "--out", str(out)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    # The fault's own oracle names some repro's first finding (a scenario may show it first
    # through another, as swa_untranslated's in-range slots do through the bytes), and that
    # repro replays.
    repros = {
        path: json.loads(path.read_text())["findings"][0]["oracle"]
        for path in sorted((out / "repros").glob("*.json"))
    }
    repro = next((path for path, first in repros.items() if first == oracle), None)
    assert repro is not None, repros
    replay = run_kvh("repro", str(repro))
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "reproduced: identical finding" in replay.stdout


@pytest.mark.slow
def test_hanging_sut_becomes_a_finding(tmp_path, fixture_sut):
    """One scenario: each hang costs the timeout and a fresh worker (18 s over the builtin set)."""
    result = run_kvh(
        *("run", "--sut", fixture_sut("hangs"), "--pool", "mha", "--dtype", "bf16"),
        *("--backend", "plain", "--scenario", scenario_file(tmp_path), "--timeout", "0.5"),
        *("--out", str(tmp_path / "out")),
    )
    assert result.returncode == 1 and "SutTimeout" in result.stdout


@pytest.mark.slow
def test_the_real_entry_point_prints_one_line_and_no_traceback(tmp_path):
    result = run_kvh("run", "--pool", "gqa", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr == (
        "kvh: error: unknown pool 'gqa'; choose from " + ", ".join(POOL_KINDS) + "\n"
    )


@pytest.mark.slow
def test_user_scenario_runs(tmp_path):
    path = scenario_file(tmp_path)
    result = run_kvh("run", "--scenario", path, "--out", str(tmp_path / "out"))
    # `plain` runs it on the reference and torch engines in each era (the judge is the baseline);
    # the other backends keep the builtin "decode" scenario out of their focus: a row each, left
    # out by design and not counted among the checks.
    assert result.returncode == 0
    assert re.search(
        r"PASS: 8 checks: 8 passed, 0 with findings, 0 known divergences, 0 both raised, "
        r"0 skipped, 0 unexplored; [1-9]\d* left out by design",
        result.stdout,
    )
