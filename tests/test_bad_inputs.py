"""The bad inputs docs/cli.md lists, each with its exit code: numbers outside what a run can carry
to its end, a results file that claims to be kvh's but is not, and a report over nothing. Each
is exit 2 with one line on stderr and nothing written, never exit 3 after the checks ran."""

from __future__ import annotations

import argparse
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli import main as kvh
from harness.cli.arguments import SEED_LIMIT, count_int, positive_float, seed_int
from harness.report.summary_files import LATEST, run_summary_path, write_run_summary
from reports.store import append, load, run_meta
from tests.helpers.results import check_rows

# argv (without --out) -> a phrase of the one line on stderr.
BAD_NUMBERS = {
    "seed 2**70": (["run", "--seed", str(2**70), "--examples", "2"], "--seed: expected"),
    "seed 2**63": (["run", "--seed", str(SEED_LIMIT)], "--seed: expected"),
    "negative seed": (["run", "--seed", "-1"], "--seed: expected"),
    "seed not whole": (["run", "--seed", "1e3"], "--seed: expected a whole number"),
    "seed superscript": (["run", "--seed", "\u00b2"], "--seed: expected a whole number"),
    "examples too many": (["run", "--examples", str(10**12)], "--examples: expected"),
    "timeout nan": (["run", "--timeout", "nan"], "--timeout: must be > 0"),
    "timeout inf": (["run", "--timeout", "inf"], "--timeout: must be > 0"),
    "jobs zero": (["run", "--jobs", "0"], "--jobs: expected"),
    "threshold nan": (["report", ".", "--threshold", "nan"], "--threshold: must lie"),
    "alpha above 1": (["report", ".", "--alpha", "2"], "--alpha: must lie"),
}


@pytest.mark.parametrize("case", list(BAD_NUMBERS))
def test_bad_number_is_one_line_exit_2_before_the_run(tmp_path, capsys, case):
    args, message = BAD_NUMBERS[case]
    out = tmp_path / "out"
    code = kvh([*args, "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and message in stderr, stderr
    assert not out.exists()


def test_seed_bounds_are_what_the_store_holds(tmp_path):
    assert seed_int("0") == 0 and seed_int(str(SEED_LIMIT - 1)) == SEED_LIMIT - 1
    # The largest seed a run takes is stored and read back whole (int64).
    meta = run_meta("cpu", seed_int(str(SEED_LIMIT - 1)))
    append(tmp_path, check_rows("plain"), "check", meta)
    assert int(load(tmp_path).of("check")["seed"].iloc[0]) == SEED_LIMIT - 1
    for bad in ("", " ", "+", "0x10", "1.0", str(SEED_LIMIT)):
        with pytest.raises(argparse.ArgumentTypeError):
            seed_int(bad)
    assert count_int("0") == 0 and positive_float("0.5") == 0.5


def _foreign_file(results, kind: str = "check"):
    """A Parquet file that carries a real kvh header (written by append) on other columns."""
    kvh_file = append(results, check_rows("plain"), kind, run_meta("cpu", 0))
    metadata = pq.read_schema(kvh_file).metadata
    forged = results / "forged.parquet"
    pq.write_table(pa.table({"colour": ["red"]}).replace_schema_metadata(metadata), forged)
    kvh_file.unlink()
    return forged


def test_kvh_metadata_on_other_columns_is_skipped_with_a_warning(tmp_path):
    forged = _foreign_file(tmp_path)
    good = append(tmp_path, check_rows("plain"), "check", run_meta("cpu", 0))
    store = load(tmp_path)
    assert set(store.of("check")["source"]) == {str(good)}
    assert len(store.warnings) == 1 and str(forged) in store.warnings[0]
    assert "lacks columns ['run_id', 'time'" in store.warnings[0]


def test_report_over_only_a_forged_file_is_exit_2(tmp_path, capsys):
    _foreign_file(tmp_path)
    assert kvh(["report", str(tmp_path)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "nothing to judge" in stderr, stderr
    assert "forged.parquet" in stderr and not (tmp_path / "report").exists()


@pytest.mark.parametrize("content", [None, b"not parquet"], ids=["empty", "only corrupt"])
def test_report_over_nothing_is_not_a_pass(tmp_path, capsys, content):
    if content is not None:
        (tmp_path / "torn.parquet").write_bytes(content)
    assert kvh(["report", str(tmp_path)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "nothing to judge" in stderr, stderr
    assert "PASS" not in stderr and not (tmp_path / "report").exists()


def test_report_with_one_valid_record_still_judges(tmp_path, capsys):
    _foreign_file(tmp_path)
    append(tmp_path, check_rows("plain"), "check", run_meta("cpu", 0))
    assert kvh(["report", str(tmp_path)]) in (0, 1)
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "summary:" in captured.out


def test_concurrent_summaries_keep_each_run_and_summary_md_is_one_of_them(tmp_path):
    runs = [f"20261201T000000Z-{n:08x}" for n in range(8)]
    threads = [
        threading.Thread(target=write_run_summary, args=(tmp_path, run, f"# run {run}\n"))
        for run in runs
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for run in runs:
        assert run_summary_path(tmp_path, run).read_text() == f"# run {run}\n"
    assert (tmp_path / LATEST).read_text() in {f"# run {run}\n" for run in runs}
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]
