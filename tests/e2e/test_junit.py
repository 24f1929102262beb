"""`--junit` end to end on the verbs whose cheapest run takes seconds: a bench of a SUT that
writes a stray slot fails each cell with the finding, and a killed mutant passes."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from tests.conftest import FIXTURES, run_kvh


def test_bench_junit_fails_each_cell_with_its_finding(tmp_path) -> None:
    junit = tmp_path / "reports" / "bench.xml"
    result = run_kvh(
        "bench",
        "--sut",
        str(FIXTURES / "stray_neighbour.py"),
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--tokens",
        "16",
        "--passes",
        "1",
        "--min-time",
        "0.001",
        "--junit",
        str(junit),
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"junit: {junit}" in result.stdout
    root = ElementTree.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    assert len(cases) >= 1 and root.attrib["failures"] == str(len(cases))
    for case in cases:
        assert "[untouched]" in case.find("failure").attrib["message"]


def test_mutants_junit_passes_a_killed_mutant(tmp_path) -> None:
    junit = tmp_path / "mutants.xml"
    result = run_kvh(
        "mutants",
        "--only",
        "mla_set_kv_no_unwrap",
        "--budget",
        "2",
        "--junit",
        str(junit),
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    root = ElementTree.parse(junit).getroot()
    assert root.attrib == {"name": "kvh mutants", "tests": "1", "failures": "0", "skipped": "0"}
    (case,) = root.iter("testcase")
    assert case.attrib["name"] == "mla_set_kv_no_unwrap" and list(case) == []
