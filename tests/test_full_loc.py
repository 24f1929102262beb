"""A call that passes KVWriteLoc.full_loc (Scenario.stale_full_loc): 0.5.23's MHA, MLA and SWA
pools ignore it, so a pool that writes its full layers there is caught, and the installed
release's own pools pass (the judge's claim, pinned against the real code)."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.cli import main
from harness.compare.verdict import judge_candidate
from harness.plan.candidate import Candidate
from harness.run.baselines import run_baselines
from harness.run.execute import execute
from harness.sut.load.sglang_loader import SutLoadError, load_sglang
from reports.outcome import Outcome
from scenarios.materialize import ForwardStaging
from tests.conftest import scenario_named

FIXTURE = "tests/fixtures/swa_reads_full_loc.py"


def test_the_stale_full_loc_is_passed_and_differs_from_the_loc():
    scenario = scenario_named("swa_mha", "bf16", "stale-full-loc")
    assert scenario.stale_full_loc
    written = set(scenario.forwards[0].loc)

    class Pool:
        registered = None

        def register_mapping(self, mapping):
            self.registered = mapping

    pool = Pool()
    full = ForwardStaging(scenario, "cpu", pool).begin(0)["full"]
    assert full is not None and not set(full.tolist()) & written
    assert pool.registered is not None  # a SWA pool's mapping is staged before the first forward


def test_a_swa_pool_writing_full_layers_at_full_loc_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", FIXTURE, "--pool", "swa_mha", "--dtype", "bf16", "--backend", "plain",
         "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "`stale-full-loc`" in out and "full sub-pool" in out


@pytest.mark.sglang
@pytest.mark.parametrize("pool", ["mha", "mla", "swa_mha", "swa_mla"])
def test_the_installed_release_ignores_full_loc_as_the_judge_says(pool):
    try:
        sglang = load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")
    scenario = scenario_named(pool, "bf16", "stale-full-loc")
    plain = BACKENDS["plain"]
    candidate = Candidate("sglang", sglang, "current", "-", "cpu", "plain")
    baselines = run_baselines(scenario, plain, "extend", ("current",), 30.0)
    verdict = judge_candidate(baselines, "current", execute(candidate, scenario, 30.0, plain))
    assert verdict.outcome is Outcome.PASS, verdict
