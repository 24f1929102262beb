"""The `kvh` entry point (harness/cli): every bad input is exit 2 with one line and nothing written,
for bad values, malformed or truncated repro files, and bad user scenarios."""

from __future__ import annotations

import pytest

from harness.cli import main as kvh
from tests.conftest import scenario_file

BAD_INPUTS = {
    "unknown pool": (["run", "--pool", "gqa"], "unknown pool 'gqa'"),
    "unknown dtype": (["run", "--dtype", "int4"], "unknown dtype 'int4'"),
    "unknown era": (["run", "--era", "v5"], "unknown era 'v5'"),
    "unknown engine": (["run", "--engine", "cuda"], "unknown engine 'cuda'"),
    "unknown backend": (["run", "--backend", "nope"], "unknown backend 'nope'"),
    "unknown device": (["run", "--device", "tpu"], "unknown device 'tpu'"),
    "absent device": (["run", "--device", "cuda"], "not available here"),
    "negative examples": (["run", "--examples", "-1"], "argument --examples: expected"),
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


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"format": "kvh-repro", "version": 1, "scen', "not valid JSON"),
        ('{"format": "other"}', "is not a kvh-repro file"),
        ('{"format": "kvh-repro", "version": 99}', "kvh-repro version 99"),
        ('{"format": "kvh-repro", "version": 1, "candidate": {}}', "missing field"),
        ("\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_or_truncated_repro_is_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="latin-1")
    code = kvh(["repro", str(path)])
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr, stderr


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["forwards"][0].update(loc=[999]), "slot id 999 outside [0, 272)"),
        (lambda d: d["forwards"][0].update(loc=[-1]), "slot id -1 outside"),
        # The first bad slot is named, not the extreme one (the check finds both in C first).
        (lambda d: d["forwards"][0].update(loc=[3, 300, -1, 999]), "slot id 300 outside"),
        (lambda d: d["forwards"][0].update(loc=[3, "4"]), "slot id '4' outside"),
        (lambda d: d["geometry"].update(pool="gqa"), "unknown pool kind 'gqa'"),
        (lambda d: d.update(colour="red"), "unknown field(s) colour"),
        (lambda d: d["forwards"][0].update(narrow=5), "narrow=5 outside"),
        (
            lambda d: d["forwards"][0].update(requests=[{"extend": 0, "length": 3}]),
            "requests[0]: a request writes 1 token or more",
        ),
        (lambda d: d["forwards"][0].update(requests={"extend": 1}), "requests: expected a list"),
        (
            lambda d: d["forwards"][0].update(extend_lens_on_host="no"),
            "extend_lens_on_host: true or false",
        ),
        (
            lambda d: d["forwards"][0].update(
                requests=[{"extend": 2, "length": 5}], extend_lens_on_host=False
            ),
            "has requests with no cached prefix",
        ),
        (
            lambda d: d["forwards"][0].update(requests=[{"extend": 2}]),
            "requests[0]: RequestSpan.__init__() missing",
        ),
    ],
)
def test_bad_user_scenario_is_exit_2(tmp_path, capsys, change, message):
    path = scenario_file(tmp_path, change)
    out = tmp_path / "out"
    code = kvh(["run", "--scenario", path, "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr, stderr
    assert not out.exists()


def test_parsing_a_run_imports_no_torch_so_a_user_worker_starts_before_it(capsys):
    """`kvh run --sut FILE.py` starts the SUT's worker once its options are parsed, so that the
    worker imports torch while this process does (harness/cli/run.py). A registry listed in an
    option's help (the pool kinds import torch) is read only when the help is shown."""
    import subprocess
    import sys

    code = (
        "import sys; from harness.cli import build_parser; "
        "argv = ['run', '--sut', 'my_pool.py', '--pool', 'mha']; "
        "build_parser(argv).parse_args(argv); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.raises(SystemExit) as shown:
        kvh(["run", "--help"])
    assert shown.value.code == 0
    assert "swa_mla" in capsys.readouterr().out
