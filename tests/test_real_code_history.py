"""kvh report flags a SUT whose newest run lost release code its previous run of the same version
had (reports/real_code_history.py), as it flags a throughput regression: exit 1, said in the
verdict, the summary and the dashboard. Another version with fewer backends is no loss; a run's
summary names each backend that ran as its model because its release class did not import."""

from __future__ import annotations

import pandas as pd

from harness.cli import main as kvh
from reports.real_code_history import real_code_drops
from reports.store import append, run_meta


def _sut_run(folder, run: str, time: str, version: str, real_code: str) -> None:
    meta = {**run_meta("cpu", 0, run_id=run), "time": time}
    row = {"sut": "sglang", "version": version, "era": "current", "real_code": real_code}
    append(folder, pd.DataFrame([row]), "sut", meta)


def test_a_backend_lost_in_the_newest_run_of_one_version_is_a_drop_and_another_version_is_not():
    columns = ["sut", "version", "run_id", "time", "real_code"]
    rows = pd.DataFrame(
        [
            ("sglang", "0.5.14", "a", "1", "fa3,triton,cutlass_mla"),
            ("sglang", "0.5.23", "b", "2", "fa3,triton"),
            ("sglang", "0.5.23", "c", "3", "triton"),
            ("mine.py", "", "c", "3", ""),
        ],
        columns=columns,
    )
    [drop] = real_code_drops(rows).to_dict("records")
    assert drop == {
        "sut": "sglang", "version": "0.5.23", "lost": "fa3", "kept": 1,
        "previous_run": "b", "latest_run": "c",
    }  # fmt: skip
    # Back again in a later run: the newest run is what counts.
    later = pd.DataFrame([{**rows.iloc[1].to_dict(), "run_id": "d", "time": "4"}])
    assert real_code_drops(pd.concat([rows, later])).empty


def test_kvh_report_fails_on_lost_release_code_and_says_which(tmp_path, capsys):
    results = tmp_path / "results"
    _sut_run(results, "run-1", "2026-12-01T00:00:00+00:00", "0.5.23", "fa3,flashinfer,triton")
    _sut_run(results, "run-2", "2026-12-02T00:00:00+00:00", "0.5.23", "fa3,triton")
    assert kvh(["report", str(results), "--out", str(tmp_path / "report")]) == 1
    said = capsys.readouterr().out
    assert "1 SUT(s) lost release code" in said.splitlines()[0]
    assert "sglang 0.5.23: flashinfer no longer ran as release code in run run-2" in said
    page = (tmp_path / "report" / "dashboard.html").read_text()
    assert "release code lost: sglang 0.5.23: flashinfer" in page
    # The same backends again: nothing lost, the report passes.
    _sut_run(results, "run-3", "2026-12-03T00:00:00+00:00", "0.5.23", "fa3,flashinfer,triton")
    assert kvh(["report", str(results), "--out", str(tmp_path / "report")]) == 0


def test_the_summary_names_each_backend_that_ran_as_its_model_and_why():
    from reports.summary import sut_line

    row = {
        "sut": "sglang", "version": "0.5.23", "era": "current", "real_code": "fa3",
        "real_code_missing": "aiter: sglang...aiter_backend did not import: ModuleNotFoundError",
    }  # fmt: skip
    line = sut_line(row)
    assert "release code for: fa3" in line
    assert "as the call-site model, its release class not imported: aiter: sglang" in line
    assert "call-site model" not in sut_line({**row, "real_code_missing": None})
