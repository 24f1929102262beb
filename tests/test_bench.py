"""kvh bench: every number comes from a verified write, and
a mismatch is a finding, not a number."""

from __future__ import annotations

import dataclasses
import math

import pytest

from harness.bench.bench_loop import _joined, measure_family
from harness.bench.bench_rows import TimedCell
from harness.bench.plan import BenchCell, BenchOptions, baseline_cell, bench_scenario, bytes_moved
from harness.bench.timers import Budget, CpuTimer, Samples
from harness.bench.verify import Baseline, Verdict
from harness.cli import main
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from reports.outcome import Outcome
from reports.schema import KINDS
from reports.store import load
from scenarios.model import Scale

TINY = Budget(warmup=1, min_samples=3, max_samples=5, min_time_s=0.0)


def _cell(spec: str, era: str, engine: str = "-") -> BenchCell:
    sut = resolve_suts(RunOptions(suts=[spec], engines=["torch"]))[0]
    return BenchCell(sut, engine if sut.loaded is None else "-", era, "plain", "extend")


@pytest.mark.slow
def test_mismatch_while_timing_is_a_finding_not_a_number(tmp_path, fixture_sut) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--sut",
            fixture_sut("stray_neighbour"),
            "--pool",
            "mha",
            "--dtype",
            "bf16",
            "--tokens",
            "16",
            "--min-time",
            "0.001",
            "--out",
            str(out),
        ]
    )
    frame = load(out).of("bench")
    assert code == 1
    assert set(KINDS["bench"].columns) <= set(frame.columns)
    faulty = frame[frame["era"] == "current"].iloc[0]
    assert faulty["outcome"] == Outcome.FINDING
    assert "[untouched]" in faulty["error"] and "slot" in faulty["error"]
    for number in ("median_ns", "gbps", "roofline_fraction", "tokens_per_s", "api_overhead_ratio"):
        assert faulty[number] is None or math.isnan(faulty[number])
    assert len(faulty["samples_ns"]) == 0


def test_measured_cells_carry_every_figure(tmp_path) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--quick",
            "--pool",
            "swa_mha",
            "--tokens",
            "16",
            "--min-time",
            "0.001",
            "--out",
            str(out),
        ]
    )
    frame = load(out).of("bench").set_index("era")
    assert code == 0 and (frame["outcome"] == Outcome.MEASURED).all()
    for era, row in frame.iterrows():
        assert row["p10_ns"] <= row["median_ns"] <= row["p90_ns"]
        assert row["samples"] == len(row["samples_ns"]) >= 15
        assert row["passes"] == 5 and row["threads"] == 1  # --quick: five passes on one thread
        assert row["bytes_moved"] == 16 * 8 * (128 + 128) * (2 + 2)
        assert row["gbps"] == pytest.approx(row["bytes_moved"] / row["median_ns"])
        assert row["roofline_fraction"] == pytest.approx(row["copy_median_ns"] / row["median_ns"])
    current = frame.loc["current"]
    assert current["api_baseline_era"] == "legacy"
    assert (
        current["api_overhead_ci_low"]
        <= current["api_overhead_ratio"]
        <= current["api_overhead_ci_high"]
    )
    assert (out / "bench.md").read_text().count("| swa_mha |") == 2


@pytest.mark.parametrize("backend,pool", [("dsa", "hisparse_dsa"), ("plain", "mha_hnd")])
def test_a_kind_with_its_own_page_size_is_benched_on_pages_it_accepts(tmp_path, backend, pool):
    """A DSA pool holds 64-token pages and a head-major pool's page is its head count: the bench
    geometry asks the kind, as the scenarios do, instead of 16-token pages every row refused."""
    out = tmp_path / "out"
    argv = ["bench", "--quick", "--backend", backend, "--pool", pool, "--dtype", "bf16"]
    code = main([*argv, "--tokens", "16", "--min-time", "0.001", "--out", str(out)])
    frame = load(out).of("bench")
    assert code == 0 and len(frame) > 0, frame["error"].tolist()
    assert (frame["outcome"] == Outcome.MEASURED).all(), frame["error"].tolist()


def test_in_place_division_is_restored_between_iterations() -> None:
    # fp32 inputs into a bf16 pool: the MHA write divides the caller's k/v in place. Without the
    # restore step the last of several timed writes would store k / scale**n and be a finding.
    scenario = dataclasses.replace(
        bench_scenario("mha", "bf16", 16, 2, seed=3),
        input_dtype="fp32",
        k_scale=Scale("float", 0.5),
        v_scale=Scale("tensor", 2.0),
    )
    baseline = Baseline(scenario, "plain", "extend", None)
    options = BenchOptions(budget=TINY)
    for spec, era in (("builtin", "current"), ("builtin", "legacy")):
        result = measure_family(
            [_cell(spec, era, "torch")], scenario, baseline, options, CpuTimer("cpu")
        )[0][0]
        assert result.verdict.outcome == Outcome.MEASURED, result.verdict.message
        assert len(result.samples[0].ns) >= TINY.min_samples


def test_bytes_moved_counts_reads_and_writes_per_dtype() -> None:
    assert bytes_moved(bench_scenario("mha", "fp8_e4m3", 4, 3, 0)) == 3 * 4 * 8 * 256 * (2 + 1)
    assert bytes_moved(bench_scenario("mla", "fp32", 4, 1, 0)) == 4 * (512 + 64) * (4 + 4)


def test_bad_bench_input_is_one_line_and_exit_2(capsys) -> None:
    assert main(["bench", "--tokens", "0"]) == 2
    assert main(["bench", "--device", "tpu"]) == 2
    assert main(["bench", "--passes", "0"]) == 2
    assert main(["bench", "--threads", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 4


def test_passes_pool_samples_and_a_finding_in_any_pass_wins() -> None:
    cell = _cell("builtin", "current", "torch")
    measured = [
        TimedCell(cell, Verdict(Outcome.MEASURED), [Samples("warm", "t", (1, 2))]),
        TimedCell(cell, Verdict(Outcome.MEASURED), [Samples("warm", "t", (3,))]),
    ]
    assert _joined(*measured).samples == [Samples("warm", "t", (1, 2, 3))]
    finding = TimedCell(cell, Verdict(Outcome.FINDING, "[bytes] layer 0"), [])
    assert _joined(measured[0], finding) is finding and _joined(finding, measured[1]) is finding


def test_the_ratio_divides_by_the_oldest_call_site_the_pools_accepted() -> None:
    cell = _cell("builtin", "current", "torch")

    def era_of(name: str) -> BenchCell:
        return dataclasses.replace(cell, era=name)

    assert baseline_cell(cell, lambda other: True) == era_of("legacy")
    # SGLang 0.5.23's SWA pool: legacy asserts swa_loc and kwarg is a TypeError.
    assert baseline_cell(cell, lambda other: other.era in ("bundled", "current")) == era_of(
        "bundled"
    )
    assert baseline_cell(era_of("legacy"), lambda other: True) is None
    assert baseline_cell(cell, lambda other: other.era == "current") is None


def test_ctrl_c_writes_the_cells_already_measured_and_exits_130(tmp_path, monkeypatch) -> None:
    import harness.bench.bench_loop as bench_run

    real, calls = bench_run.measure_family, []

    def interrupted_in_pass_two(*arguments):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*arguments)

    monkeypatch.setattr(bench_run, "measure_family", interrupted_in_pass_two)
    out = tmp_path / "out"
    code = main(
        [
            "bench",
            "--pool",
            "mha",
            "--dtype",
            "bf16",
            "--era",
            "legacy,current",
            "--engine",
            "torch",
            "--tokens",
            "16",
            "--passes",
            "2",
            "--min-time",
            "0.002",
            "--out",
            str(out),
        ]
    )
    frame = load(out).of("bench")
    assert code == 130 and len(calls) == 2
    assert sorted(frame["era"]) == ["current", "legacy"]
    assert (frame["outcome"] == Outcome.MEASURED).all() and (frame["passes"] == 1).all()


def test_ctrl_c_before_any_family_finished_writes_nothing(tmp_path, monkeypatch) -> None:
    import harness.bench.bench_loop as bench_run

    def interrupted(*arguments):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_run, "measure_family", interrupted)
    out = tmp_path / "out"
    assert (
        main(["bench", "--pool", "mha", "--dtype", "bf16", "--tokens", "16", "--out", str(out)])
        == 130
    )
    assert not out.exists() or not list(out.iterdir())


def test_a_release_that_is_not_installed_is_a_usage_error_before_any_work(tmp_path, capsys) -> None:
    assert main(["bench", "--sut", "sglang==0.0.1", "--out", str(tmp_path)]) == 2
    assert "sglang==0.0.1" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
