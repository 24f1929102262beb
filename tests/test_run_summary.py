"""The one run summary (harness/report/run_summary.py) reads everything it says from stored
records: findings with their repro and reproduce blob, divergences worded from their
declarations, and skips that name their cell even when no candidate was built."""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.registry import BACKENDS
from harness.cli.jobs import options_argv
from harness.cli.run import add_arguments
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.report.cell_result import CellResult
from harness.report.check_record import record_of
from harness.report.run_summary import StoredRun, run_summary
from harness.report.skip_lines import skip_lines
from reports.outcome import Outcome
from reports.records import records_frame
from reports.store import run_meta
from scenarios.defaults import default_scenarios

ROW = {
    "sut": "builtin", "device": "cpu", "backend": "plain", "mode": "extend", "pool": "swa_mha",
    "era": "kwarg", "engine": "torch", "dtype": "bf16", "scenario": "prefill", "outcome": "pass",
    "label": "builtin/kwarg/torch/plain:extend@cpu",
}  # fmt: skip


def _run(*rows: dict) -> StoredRun:
    checks = records_frame("check", [dict(ROW, **row) for row in rows])
    stored = checks.assign(source=str(Path("results") / "check-x.parquet"))
    return StoredRun(run_meta("cpu", 0), stored, records_frame("coverage", []))


def test_a_skip_decided_before_any_candidate_records_its_cell():
    not_loaded = SutChoice("x.py", ("-",), load_error="SUT 'x.py' failed to import")
    [skip] = candidates_for(BACKENDS["plain"], "extend", [not_loaded], RunOptions())
    assert isinstance(skip, Skip) and (skip.backend, skip.mode) == ("plain", "extend")
    scenario = default_scenarios("mha", "bf16", 0)[0]
    row = record_of(CellResult(None, scenario, Outcome.SKIPPED, skip=skip, label=skip.label))
    assert (row["backend"], row["mode"], row["detail"]) == ("plain", "extend", skip.reason)
    [line] = skip_lines(records_frame("check", [row]))
    assert line == f"1 checks skipped: {skip.reason} (x.py/-/-/plain:extend mha/bf16)"


def test_a_finding_is_named_with_its_repro_beside_the_file_it_is_stored_in():
    run = _run(
        {
            "outcome": "finding",
            "detail": "[bytes] slot 3 differs",
            "repro": "repros/a.json",
            "reproduce": "seed 0, blob",
        }
    )
    summary = run_summary(run, BACKENDS, Path("results/summary.md"))
    finding = "builtin/kwarg/torch/plain:extend@cpu `prefill`: [bytes] slot 3 differs"
    repro = Path("results") / "repros" / "a.json"
    assert f"FINDING {finding} (repro: {repro}) seed 0, blob" in summary.stdout
    assert summary.findings == 1 and "**FAIL: 1 checks" in summary.markdown


def test_divergence_lines_are_worded_from_the_declarations_the_rows_name():
    run = _run(
        {"outcome": "known_divergence", "divergence": "unsliced-swa-loc"},
        {"outcome": "known_divergence", "divergence": "unsliced-swa-loc", "sut": "model"},
    )
    markdown = run_summary(run, BACKENDS, Path("summary.md")).markdown
    candidates, era_table = markdown.split("## Era table")
    assert "`unsliced-swa-loc` (fixed-later; eras kwarg, bundled; #29460), reproduced in era " in (
        candidates
    )
    assert "Divergences the model reproduced:" in era_table and "#29460" in era_table


def test_an_option_added_to_the_verb_travels_to_the_children_unwritten():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    parser.add_argument("--brand-new", type=float, default=1.0)
    arguments = parser.parse_args(["--brand-new", "2.5", "--pool", "mha", "--out", "o"])
    assert options_argv(arguments, parser, ("out",)) == ["--pool", "mha", "--brand-new", "2.5"]
