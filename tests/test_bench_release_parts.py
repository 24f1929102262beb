"""The parts of a release bench that run without a release: the worker's timed writes served in
this process, a write timed elsewhere taking its turns, the A/B test's choice, the pairing of a
SUT's cell with the first SUT's, and the conventions a SUT is timed through."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.bench.bench_rows import TimedCell, sut_baseline
from harness.bench.interleave import sample_interleaved
from harness.bench.plan import (
    BenchCell,
    BenchOptions,
    bench_scenario,
    bytes_moved,
    foreign_eras,
    written_layers,
)
from harness.bench.remote import RemoteTimedWrite
from harness.bench.served import BenchService
from harness.bench.timers import Budget, CpuTimer, Samples
from harness.bench.timing_stats import ab_test
from harness.bench.verify import Verdict
from harness.cli.worker import held_scenario
from harness.plan.sut_choice import SutChoice
from harness.sut.load.loader import LoadedSut
from harness.sut.probe.capabilities import Capabilities
from harness.sut.probe.detect import conventions
from harness.sut.worker.protocol import decode_execution, encode_execution
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from scenarios.serialize import to_dict

TINY = Budget(warmup=1, warmup_s=0.0, min_samples=3, max_samples=5, min_time_s=0.0)


def _open(service: BenchService, label: str, scenario, backend: str = "plain") -> dict:
    """bench_open as the worker serves it: the scenario as it parses and holds the request's."""
    candidate = dict(backend=backend, mode="extend", device="cpu", era="current")
    request = dict(label=label, scenario_key=0, scenario=to_dict(scenario))
    held = held_scenario(request, {})
    return service.open(dict(request, candidate=candidate, threads=1), held)


def test_the_worker_serves_a_timed_write_turn_by_turn_and_its_bytes() -> None:
    scenario = bench_scenario("swa_mha", "bf16", 16, 1, seed=0)
    service = BenchService(builtin_module("current", "torch"))
    assert _open(service, "a", scenario) == {"error": None, "timed_code": "call-site model"}
    budget = dict(dataclasses.asdict(TINY), min_samples=3, max_samples=3)
    turn = dict(label="a", device="cpu", cache="warm", phase="warm:timed", budget=budget)
    first = service.turn({**turn, "per_turn": 2})
    second = service.turn({**turn, "per_turn": 2})
    # The worker keeps the phase's samples: the budget of three is met over two turns.
    assert first["error"] is None and len(first["ns"]) == 2 and len(second["ns"]) == 1
    assert all(ns > 0 for ns in first["ns"] + second["ns"])
    snapshot = service.snapshot("a")
    assert snapshot.error is None and snapshot.buffers
    # What crosses the pipe decodes to the same bytes.
    sent = decode_execution(encode_execution(snapshot, "all"))
    assert all(sent.buffers[name].equal(t) for name, t in snapshot.buffers.items())
    service.close()
    assert "no timed write 'a'" in service.turn({**turn, "per_turn": 1})["error"]
    assert "no timed write 'a'" in service.snapshot("a").error


def test_a_cell_the_sut_cannot_build_is_an_error_as_data_not_the_workers_end() -> None:
    scenario = bench_scenario("mha", "bf16", 16, 1, seed=0)
    # A module without pools: building the cell raises inside the SUT's process.
    opened = _open(BenchService(object()), "a", scenario)
    assert opened["error"] and "timed_code" not in opened


class _Elsewhere:
    """A write timed in another process: each turn adds one sample, and says so."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    def turn(self, cache, phase, samples, budget, per_turn) -> None:
        self.turns.append((cache, phase))
        samples.append(1000)


def test_a_write_timed_elsewhere_takes_turns_beside_one_timed_here() -> None:
    elsewhere, here = _Elsewhere(), []
    sampled = sample_interleaved(
        CpuTimer("cpu"),
        {"remote": elsewhere, "local": (lambda: None, lambda: here.append(1))},
        TINY,
    )
    assert sampled["remote"] == [Samples("warm", "perf_counter_ns", (1000,) * 3)]
    assert len(sampled["local"][0].ns) == 3
    # Warm-up and timed turns are phases of their own, so the worker keeps their samples apart.
    assert {phase for _, phase in elsewhere.turns} == {"warm:warmup", "warm:timed"}


def test_the_ab_test_is_chosen_by_the_samples_shape() -> None:
    rng = np.random.default_rng(0)
    normal = ab_test(rng.normal(100, 5, 400), rng.normal(100, 5, 400))
    assert normal.test == "welch_t" and normal.p_value > 0.01
    # Timing samples: a floor with a long tail of descheduled iterations.
    skewed = ab_test(100 + rng.exponential(20, 400), 130 + rng.exponential(20, 400))
    assert skewed.test == "mann_whitney_u" and skewed.p_value < 1e-6


def test_a_one_layer_swa_bench_holds_a_full_layer_and_writes_the_swa_one() -> None:
    scenario = bench_scenario("swa_mha", "bf16", 16, 1, seed=0)
    g = scenario.geometry
    assert (g.layer_num, g.swa_layer_ids, written_layers(scenario)) == (2, [0], 1)
    assert bytes_moved(scenario) == bytes_moved(bench_scenario("mha", "bf16", 16, 1, seed=0))


def _foreign(spec: str, era: str, caps: Capabilities = Capabilities()) -> SutChoice:
    return SutChoice(spec, ("-",), LoadedSut(spec, object(), era, capabilities=caps))


def test_a_foreign_sut_is_timed_only_through_the_conventions_it_offers() -> None:
    release = _foreign("sglang", "current", Capabilities(swa_loc_keyword=False))
    assert conventions(release.loaded.capabilities, "current") == ("current",)
    assert foreign_eras(release, BenchOptions(eras=["legacy", "current"])) == ("current",)
    named = BenchOptions(eras=["legacy", "current"], eras_named=True)
    assert foreign_eras(release, named) == ("current",)
    # A release of the bundled era whose SWA pool still takes swa_loc= offers kwarg beside it.
    both = _foreign("old", "bundled", Capabilities(swa_loc_keyword=True))
    named = BenchOptions(eras=["kwarg", "bundled"], eras_named=True)
    assert foreign_eras(both, named) == ("kwarg", "bundled")


def test_a_release_is_compared_with_the_first_release_through_its_own_era() -> None:
    older, newer = _foreign("sglang==0.5.13", "kwarg"), _foreign("sglang==0.5.14", "bundled")
    measured = [Samples("warm", "t", (1, 2, 3))]

    def timed(sut: SutChoice, era: str, backend: str = "triton") -> TimedCell:
        return TimedCell(
            BenchCell(sut, "-", era, backend, "decode"), Verdict(Outcome.MEASURED), measured
        )

    cells = [timed(older, "kwarg"), timed(newer, "bundled"), timed(older, "kwarg", "fa3")]
    results = {cell.cell.label: cell for cell in cells}
    order = ["sglang==0.5.13", "sglang==0.5.14"]
    assert sut_baseline(cells[1], results, order) is cells[0]
    assert sut_baseline(cells[0], results, order) is None  # the first SUT is the baseline
    # Only a measured cell is a baseline.
    unmeasured = dataclasses.replace(cells[0], samples=[])
    assert sut_baseline(cells[1], {**results, cells[0].cell.label: unmeasured}, order) is None


class _Interrupted:
    """A worker asked a question when the bench's time limit (or Ctrl-C) cut the wait short."""

    def __init__(self) -> None:
        self.stopped = False

    def ask(self, *args, **kwargs) -> dict:
        raise KeyboardInterrupt

    def stop(self) -> None:
        self.stopped = True


def test_a_wait_cut_short_stops_the_worker_so_no_late_answer_is_read_as_the_next() -> None:
    worker = _Interrupted()
    write = RemoteTimedWrite.__new__(RemoteTimedWrite)
    write.worker, write.label, write.timeout_s, write.device = worker, "a", 1.0, "cpu"
    with pytest.raises(KeyboardInterrupt):
        write.turn("warm", "warm:timed", [], TINY, 1)
    assert worker.stopped
