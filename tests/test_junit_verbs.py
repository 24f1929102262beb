"""`--junit` on `kvh bench` and `kvh mutants`: one test case per bench cell or mutant, a finding
or a survivor a failure saying why, an error or an equivalent mutant an error or a skip with its
reason; a folder that cannot take the file is exit 2 before any work."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.cli.bench import JUNIT_CELL
from harness.cli.junit import write_junit
from harness.cli.mutants import detail_of
from harness.exit_codes import EXIT_USAGE
from harness.run.mutation import MutantResult
from mutants.catalog import CATALOG
from reports.outcome import MutantOutcome


def _bench_row(era: str, outcome: str, cache: str | None, error: str = "") -> dict:
    return {
        "pool": "mha",
        "dtype": "bf16",
        "backend": "plain",
        "mode": "extend",
        "sut": "builtin",
        "era": era,
        "engine": "torch",
        "tokens": 16,
        "layers": 1,
        "cache": cache,
        "outcome": outcome,
        "error": error,
    }


def _cases(path: Path) -> tuple[ElementTree.Element, dict[str, ElementTree.Element]]:
    root = ElementTree.parse(path).getroot()
    return root, {case.attrib["name"]: case for case in root.iter("testcase")}


def test_bench_has_one_case_per_cell_a_finding_fails_and_an_error_errs(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            _bench_row("legacy", "measured", "warm"),
            _bench_row("legacy", "measured", "cold"),
            _bench_row("kwarg", "finding", None, "[untouched] slot 240 was changed"),
            _bench_row("current", "error", None, "raised while timing: AssertionError"),
        ]
    )
    root, cases = _cases(write_junit(tmp_path / "bench.xml", frame, "bench", JUNIT_CELL))
    assert root.attrib == {
        "name": "kvh bench",
        "tests": "3",
        "failures": "1",
        "skipped": "0",
        "errors": "1",
    }
    prefix = "mha/bf16/plain/extend/builtin"
    assert set(cases) == {f"{prefix}/{era}/torch/16/1" for era in ("legacy", "kwarg", "current")}
    assert list(cases[f"{prefix}/legacy/torch/16/1"]) == []
    (failure,) = cases[f"{prefix}/kwarg/torch/16/1"]
    assert failure.tag == "failure" and failure.attrib["type"] == "finding"
    assert failure.attrib["message"] == failure.text == "[untouched] slot 240 was changed"
    (error,) = cases[f"{prefix}/current/torch/16/1"]
    assert error.tag == "error" and error.attrib["message"].startswith("raised while timing")


def test_mutants_fail_on_a_survivor_naming_it_and_skip_an_equivalent(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        [
            {"mutant": "kv_swapped", "outcome": "killed", "detail": "[bytes] differ", "repro": "r"},
            {"mutant": "noop", "outcome": "survived", "detail": "no finding in 9 scenarios"},
            {"mutant": "slow", "outcome": "survived (budget exhausted)", "detail": "no finding"},
            {"mutant": "same", "outcome": "equivalent", "detail": "writes the same bytes"},
        ]
    )
    root, cases = _cases(write_junit(tmp_path / "mutants.xml", frame, "mutants", ("mutant",)))
    assert root.attrib == {"name": "kvh mutants", "tests": "4", "failures": "2", "skipped": "1"}
    assert list(cases["kv_swapped"]) == []
    (failure,) = cases["noop"]
    assert failure.tag == "failure" and failure.attrib["type"] == "survived"
    assert failure.attrib["message"] == "mutant noop survived: no finding in 9 scenarios"
    assert failure.text == "no finding in 9 scenarios"
    assert (
        cases["slow"]
        .find("failure")
        .attrib["message"]
        .startswith("mutant slow survived (budget exhausted): ")
    )
    assert cases["same"].find("skipped").attrib["message"] == "writes the same bytes"


def test_a_survivor_row_says_what_it_withstood() -> None:
    mutant = next(m for m in CATALOG if not m.equivalent)
    alive = MutantResult(mutant, MutantOutcome.SURVIVED, examples=12, seconds=3.0)
    assert detail_of(alive).startswith("no finding in 12 scenarios judged in 3.0s")
    killed = MutantResult(mutant, MutantOutcome.KILLED, "bytes", 1, detail="[bytes] differ")
    assert detail_of(killed) == "[bytes] differ"


@pytest.mark.parametrize("verb", ["bench", "mutants"])
def test_an_unwritable_junit_folder_is_one_line_and_exit_2(
    verb: str, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out"
    argv = [verb, "--junit", "/proc/kvh-cannot-write/junit.xml", "--out", str(out)]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("kvh: error: --junit") and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
