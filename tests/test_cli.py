"""`kvh` end to end, in a subprocess: exit codes, outputs, planted faults, and every bad input."""
from __future__ import annotations

import json
import re

import pytest

from harness.cli import main as kvh
from scenarios.model import POOL_KINDS
from tests.conftest import check_records, run_kvh


def test_default_run_passes_and_covers_every_era_pool_and_dtype(tmp_path):
    out = tmp_path / "out"
    result = run_kvh("run", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    frame = check_records(out)
    assert set(frame["era"]) == {"legacy", "kwarg", "bundled", "current"}
    assert set(frame["pool"]) == set(POOL_KINDS)
    assert set(frame["dtype"]) == {"bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2"}
    checks, model = frame[frame["sut"] != "model"], frame[frame["sut"] == "model"]
    assert set(checks["engine"]) == {"torch"} and set(model["engine"]) == {"reference"}
    assert (frame["outcome"] != "finding").all()
    # Every known divergence is a declared one; PR #29460's unsliced swa_loc shows in exactly
    # the two eras before it, in the era table and in the candidates that reproduce it.
    known = frame[frame["outcome"] == "known_divergence"]
    assert (known["divergence"] != "").all()
    unsliced = known[known["divergence"] == "unsliced-swa-loc"]
    assert set(unsliced["divergence_pr"]) == {"#29460"} and set(unsliced["era"]) == {"kwarg", "bundled"}
    assert set(unsliced["sut"]) == {"builtin", "model"}
    # Every skip is a row with its reason, and the counts printed add up to the rows.
    skipped = checks[checks["outcome"] == "skipped"]
    assert len(skipped) and (skipped["detail"].str.len() > 0).all()
    line = re.search(r"PASS: (\d+) checks: (\d+) passed, (\d+) with findings, (\d+) known "
                     r"divergences, (\d+) both raised, (\d+) skipped, (\d+) unexplored", result.stdout)
    assert line and int(line[1]) == len(checks) == sum(int(n) for n in line.groups()[1:])
    assert f"era table: {len(model)} checks" in result.stdout
    summary = (out / "summary.md").read_text()
    assert summary.splitlines()[2].startswith("**PASS") and "#29460" in summary
    assert "## Era table" in summary and "## Skipped" in summary and "no PR: diff of" in summary
    assert re.search(r"kvh: \[(\d+)/\1\] ", result.stderr)      # progress, to the last group
    assert not list(out.glob("**/*.tmp"))


@pytest.mark.parametrize("fault, pool, oracle", [
    ("mla_no_unwrap", "mla", "exception"),
    ("swa_untranslated", "swa_mha", "exception"),
    ("copy_not_inplace", "mha", "caller_tensors"),
    ("stray_neighbour", "mha", "untouched"),
    ("scale_ignored", "mha", "bytes"),
])
def test_planted_fault_exits_1_and_its_repro_replays_the_same_finding(tmp_path, fixture_sut, fault, pool, oracle):
    out = tmp_path / "out"
    result = run_kvh("run", "--sut", fixture_sut(fault), "--pool", pool, "--dtype", "bf16",
                     "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    repros = sorted((out / "repros").glob("*.json"))
    assert repros
    payload = json.loads(repros[0].read_text())
    assert payload["findings"][0]["oracle"] == oracle
    replay = run_kvh("repro", str(repros[0]))
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "reproduced: identical finding" in replay.stdout


def test_repro_of_a_fixed_pool_is_not_reproduced(tmp_path, fixture_sut):
    out = tmp_path / "out"
    run_kvh("run", "--sut", fixture_sut("scale_ignored"), "--pool", "mha", "--dtype", "fp16", "--out", str(out))
    repro = sorted((out / "repros").glob("*.json"))[0]
    payload = json.loads(repro.read_text())
    payload["candidate"]["sut"] = "builtin"
    payload["candidate"]["engine"] = "torch"
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(payload))
    replay = run_kvh("repro", str(fixed))
    assert replay.returncode == 0 and "not reproduced" in replay.stdout


def test_hanging_sut_becomes_a_finding(tmp_path, fixture_sut):
    result = run_kvh("run", "--sut", fixture_sut("hangs"), "--pool", "mha", "--dtype", "bf16",
                     "--backend", "plain", "--timeout", "0.5", "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "SutTimeout" in result.stdout


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _scenario_with(tmp_path, change):
    from scenarios.builtin import default_scenarios
    from scenarios.serialize import to_dict
    data = to_dict(default_scenarios("mha", "bf16", 0)[1])
    change(data)
    return _write(tmp_path, "scenario.json", json.dumps(data))


BAD_INPUTS = {
    "unknown pool": (["run", "--pool", "gqa"], "unknown pool 'gqa'"),
    "unknown dtype": (["run", "--dtype", "int4"], "unknown dtype 'int4'"),
    "unknown era": (["run", "--era", "v5"], "unknown era 'v5'"),
    "unknown engine": (["run", "--engine", "cuda"], "unknown engine 'cuda'"),
    "unknown backend": (["run", "--backend", "nope"], "unknown backend 'nope'"),
    "unknown device": (["run", "--device", "tpu"], "unknown device 'tpu'"),
    "absent device": (["run", "--device", "cuda"], "not available here"),
    "negative examples": (["run", "--examples", "-1"], "--examples must be >= 0"),
    "unknown verb": (["frobnicate"], "invalid choice"),
    "missing SUT module": (["run", "--sut", "kvh_no_such_module"], "failed to import"),
    "missing repro": (["repro", "no-such.json"], "does not exist"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, case):
    args, message = BAD_INPUTS[case]
    out = tmp_path / "out"
    code = kvh([*args, *(["--out", str(out)] if args[0] == "run" else [])])
    stderr = capsys.readouterr().err
    assert code == 2
    assert stderr.count("\n") == 1 and message in stderr, stderr
    assert not out.exists()


def test_the_real_entry_point_prints_one_line_and_no_traceback(tmp_path):
    result = run_kvh("run", "--pool", "gqa", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr == (
        "kvh: error: unknown pool 'gqa'; choose from " + ", ".join(POOL_KINDS) + "\n")


@pytest.mark.parametrize("content, message", [
    ('{"format": "kvh-repro", "version": 1, "scen', "not valid JSON"),
    ('{"format": "other"}', "is not a kvh-repro file"),
    ('{"format": "kvh-repro", "version": 99}', "kvh-repro version 99"),
    ('{"format": "kvh-repro", "version": 1, "candidate": {}}', "missing field"),
    ('\xff\xfe', "not valid JSON"),
])
def test_malformed_or_truncated_repro_is_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="latin-1")
    code = kvh(["repro", str(path)])
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr, stderr


@pytest.mark.parametrize("change, message", [
    (lambda d: d["forwards"][0].update(loc=[999]), "slot id 999 outside [0, 272)"),
    (lambda d: d["forwards"][0].update(loc=[-1]), "slot id -1 outside"),
    (lambda d: d["geometry"].update(pool="gqa"), "unknown pool kind 'gqa'"),
    (lambda d: d.update(colour="red"), "unknown field(s) colour"),
    (lambda d: d["forwards"][0].update(narrow=5), "narrow=5 outside"),
])
def test_bad_user_scenario_is_exit_2(tmp_path, capsys, change, message):
    path = _scenario_with(tmp_path, change)
    out = tmp_path / "out"
    code = kvh(["run", "--scenario", path, "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr, stderr
    assert not out.exists()


def test_user_scenario_runs(tmp_path):
    path = _scenario_with(tmp_path, lambda d: None)
    result = run_kvh("run", "--scenario", path, "--out", str(tmp_path / "out"))
    # `plain` runs it on the torch engine in each era (the reference engine is the baseline); the
    # other backends keep the builtin "decode" scenario out of their focus: a skipped row each.
    assert result.returncode == 0
    assert re.search(r"PASS: \d+ checks: 4 passed, 0 with findings, 0 known divergences, 0 "
                     r"both raised, [1-9]\d* skipped", result.stdout)
