"""Exit codes mean one thing each: 1 is findings; a bad value or an output that cannot be written
is 2 with one line and nothing written; an internal error is 3 with its traceback."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.cli.junit import MUTANT_FAILED, write_junit
from harness.errors import EXIT_INTERNAL, EXIT_USAGE


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out", "/proc/kvh-cannot-write"],
        ["matrix", "--out", "/proc/kvh-cannot-write.json"],
        ["run", "--timeout", "-1"],
        ["run", "--timeout", "zero"],
    ],
)
def test_bad_values_and_unwritable_outputs_are_one_line_and_exit_2(argv, capsys) -> None:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("kvh: error:") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_read_only_output_folder_is_exit_2_and_nothing_is_written(tmp_path: Path, capsys) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inner").mkdir()
    locked.chmod(0o500)
    try:
        import os

        if os.access(locked, os.W_OK) and os.geteuid() == 0:
            # root ignores permission bits: probe /proc instead, which refuses even root.
            target = Path("/proc") / "kvh-out"
        else:
            target = locked / "out"
        assert (
            main(
                [
                    "run",
                    "--pool",
                    "mha",
                    "--dtype",
                    "bf16",
                    "--backend",
                    "plain",
                    "--out",
                    str(target),
                ]
            )
            == EXIT_USAGE
        )
        assert not target.exists()
    finally:
        locked.chmod(0o700)
    assert "cannot be written" in capsys.readouterr().err


def test_an_internal_error_is_exit_3_with_its_traceback(monkeypatch, capsys) -> None:
    import harness.cli.matrix as matrix

    def broken(arguments):
        raise ZeroDivisionError("a bug of the harness")

    monkeypatch.setattr(matrix, "main", broken)
    assert main(["matrix"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "not a finding" in err


def test_junit_has_one_case_per_cell_with_the_finding_and_its_repro(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {
                "pool": "mha",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "pass",
                "detail": "",
                "repro": None,
            },
            {
                "pool": "mha",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "finding",
                "detail": "[bytes] written bytes differ",
                "repro": "repros/x.json",
            },
            {
                "pool": "mla",
                "dtype": "bf16",
                "backend": "plain",
                "outcome": "skipped",
                "detail": "no-cross-attention: ...",
                "repro": None,
            },
            {
                "pool": "mla",
                "dtype": "fp16",
                "backend": "plain",
                "outcome": "pass",
                "detail": "",
                "repro": None,
            },
        ]
    )
    path = write_junit(tmp_path / "junit.xml", frame, "run", ("pool", "dtype", "backend"))
    root = ElementTree.parse(path).getroot()
    assert root.attrib == {"name": "kvh run", "tests": "3", "failures": "1", "skipped": "1"}
    cases = {case.attrib["name"]: case for case in root.iter("testcase")}
    assert set(cases) == {"mha/bf16/plain", "mla/bf16/plain", "mla/fp16/plain"}
    failure = cases["mha/bf16/plain"].find("failure")
    assert failure is not None and "kvh repro repros/x.json" in failure.text
    assert cases["mla/bf16/plain"].find("skipped").attrib["message"].startswith("no-cross")
    assert list(cases["mla/fp16/plain"]) == []


def test_junit_for_mutants_fails_on_a_survivor_not_on_a_kill(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {"mutant": "a", "outcome": "killed", "detail": ""},
            {"mutant": "b", "outcome": "survived", "detail": "no finding"},
        ]
    )
    root = ElementTree.parse(
        write_junit(tmp_path / "m.xml", frame, "mutants", ("mutant",), MUTANT_FAILED)
    ).getroot()
    assert root.attrib["failures"] == "1"
