"""A layer whose forward is told not to save (save_kv_cache=False) is called and writes nothing:
the scenario says so, the judge and the expected writes leave its rows at the canary, and a
write there is the untouched oracle's finding. The release's own forwards are driven with the
flag (tests/test_real_code_release.py plants a decode that ignores it)."""

from __future__ import annotations

import copy
import importlib.util
from dataclasses import replace

import pytest

from backends.registry import backend_named
from harness.compare.comparison import judge
from harness.compare.expectations import expected_writes
from harness.compare.snapshot import CANARY
from harness.plan.baseline import baseline_for
from harness.run.execute import execute
from harness.run.release_lines import unmeasured
from scenarios.serialize import ScenarioError, from_dict, to_dict
from tests.conftest import scenario_named


@pytest.fixture(scope="module", params=["mha", "swa_mha", "mla"])
def case(request):
    scenario = scenario_named(request.param, "bf16", "unsaved-layer", seed=0)
    baseline = execute(baseline_for(backend_named("fa3"), "extend"), scenario)
    assert baseline.error is None, baseline.error
    return scenario, baseline, expected_writes(scenario)


def _unsaved_buffers(scenario, expected) -> list[str]:
    unsaved = scenario.forwards[0].unsaved_layers
    return [name for name in expected if int(name.split(".", 1)[0][1:]) in unsaved]


def test_the_unsaved_layer_is_called_but_not_written(case):
    scenario, baseline, expected = case
    forward = scenario.forwards[0]
    assert forward.unsaved_layers == [1]
    assert scenario.called_layers(forward) == [1] and scenario.layers_of(forward) == []
    unsaved = _unsaved_buffers(scenario, expected)
    assert unsaved and all(not expected[name] for name in unsaved)
    assert all(bool((baseline.buffers[name] == CANARY).all()) for name in baseline.buffers)


def test_a_write_into_the_unsaved_layer_is_an_untouched_finding(case):
    scenario, baseline, expected = case
    wrote = copy.deepcopy(baseline)
    name = _unsaved_buffers(scenario, expected)[0]
    slot = scenario.forwards[0].loc[0]
    if scenario.geometry.kind.swa:  # the unsaved layer 1 is the SWA layer: its row is mapped
        slot = scenario.mapping[slot]
    wrote.buffers[name][slot] ^= 0xFF
    findings = judge(scenario, baseline, wrote, expected)
    assert [(f.oracle, f.buffer, f.slot) for f in findings] == [("untouched", name, slot)]


def test_unsaved_layers_round_trip_and_bad_ones_are_refused():
    scenario = scenario_named("mha", "bf16", "unsaved-layer", seed=0)
    assert from_dict(to_dict(scenario)) == scenario
    forward = scenario.forwards[0]
    for bad, why in (
        (replace(forward, layers=[0]), "layers the forward calls"),
        (
            replace(forward, encoder_loc=forward.loc, cross_layers=[1], unsaved_layers=[1]),
            "cross-attention",
        ),
    ):
        with pytest.raises(ScenarioError, match=why):
            from_dict(to_dict(replace(scenario, forwards=[bad])))


@pytest.mark.filterwarnings("ignore:No data was collected")  # the paused call's, as meant
def test_a_forward_told_not_to_save_is_left_out_of_the_measured_lines(tmp_path):
    """What an unsaved forward runs past its save test is attention: `kvh run --coverage` (and a
    mutation campaign's scope) leaves it out, and measures again after it."""
    coverage = pytest.importorskip("coverage")
    module = tmp_path / "attention.py"
    module.write_text("def forward():\n    total = 1\n    return total\n")
    spec = importlib.util.spec_from_file_location("kvh_unsaved_attention", module)
    attention = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attention)
    measure = coverage.Coverage(data_file=None, include=[str(module)], config_file=False)
    measure.start()
    try:
        unmeasured(attention.forward)()
        assert coverage.Coverage.current() is measure  # measuring again after the call
    finally:
        measure.stop()
    assert not measure.get_data().lines(str(module))
    measure.start()
    try:
        attention.forward()
    finally:
        measure.stop()
    assert sorted(measure.get_data().lines(str(module))) == [2, 3]
