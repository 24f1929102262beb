"""The Comparison's reuse is exact: what it answers with its shortcuts is what every oracle says
when asked on its own, and each pair is compared once."""

from __future__ import annotations

import copy

import pytest

from backends.registry import backend_named
from harness.compare import comparison as comparison_module
from harness.compare.comparison import Comparison
from harness.compare.expectations import expected_writes
from harness.compare.oracles import ALWAYS, BOTH_RAISED, COMPLETED, ORACLES
from harness.plan.baseline import baseline_for
from harness.run.execute import execute
from tests.conftest import scenario_named


def every_oracle(scenario, baseline, candidate, expected) -> list:
    """The findings with no reuse at all: every oracle that speaks for the pair, asked afresh."""

    def asked(when):
        return [
            f
            for o in ORACLES
            if o.when == when
            for f in o.check(scenario, baseline, candidate, expected)
        ]

    exception = asked(ALWAYS)
    if exception:
        return exception
    if candidate.error is not None:
        return asked(BOTH_RAISED)
    return asked(COMPLETED)


@pytest.fixture(scope="module")
def case():
    scenario = scenario_named("mha", "bf16", "scaled-float", seed=3)
    baseline = execute(baseline_for(backend_named("plain"), "extend"), scenario)
    assert baseline.error is None
    return scenario, baseline, expected_writes(scenario)


def _variants(scenario, baseline, expected):
    same = copy.deepcopy(baseline)
    flipped = copy.deepcopy(baseline)
    flipped.buffers["L1.k"][sorted(expected["L1.k"])[2], 0] ^= 0x40
    stray = copy.deepcopy(baseline)
    unwritten = next(
        s for s in range(1, stray.buffers["L0.v"].shape[0]) if s not in expected["L0.v"]
    )
    stray.buffers["L0.v"][unwritten, 1] ^= 0x01
    raised = copy.deepcopy(baseline)
    raised.error, raised.error_at = "IndexError: boom", "forward 0, layer 0"
    return {"same": same, "flipped": flipped, "stray": stray, "raised": raised}


def test_the_comparison_says_what_every_oracle_says_asked_alone(case):
    scenario, baseline, expected = case
    comparison = Comparison(scenario, expected)
    for name, candidate in _variants(scenario, baseline, expected).items():
        want = every_oracle(scenario, baseline, candidate, expected)
        assert comparison.judge(baseline, candidate).findings() == want, name
        # asked twice, from the other side too: the same answers
        assert comparison.judge(baseline, candidate).findings() == want, name
    assert every_oracle(
        scenario, baseline, _variants(scenario, baseline, expected)["flipped"], expected
    )


def test_each_pair_is_compared_once_and_identical_runs_share_a_self_check(case, monkeypatch):
    scenario, baseline, expected = case
    compared, checked = [], []
    real_equal, real_check = comparison_module.buffers_equal, comparison_module.self_check
    monkeypatch.setattr(
        comparison_module, "buffers_equal", lambda *a: compared.append(1) or real_equal(*a)
    )
    monkeypatch.setattr(
        comparison_module, "self_check", lambda *a: checked.append(1) or real_check(*a)
    )
    comparison = Comparison(scenario, expected)
    same = copy.deepcopy(baseline)
    comparison.self_check(baseline)
    comparison.judge(baseline, same)
    comparison.judge(baseline, same)
    assert comparison.identical(same, baseline)  # the other way round: the same pair
    assert (len(compared), len(checked)) == (1, 1)


def test_an_answer_goes_with_its_run(case):
    """A run that is gone is never taken for a new one at the same address."""
    scenario, baseline, expected = case
    comparison = Comparison(scenario, expected)
    for _ in range(3):
        flipped = copy.deepcopy(baseline)
        flipped.buffers["L1.k"][sorted(expected["L1.k"])[2], 0] ^= 0x40
        assert comparison.judge(baseline, flipped).findings()
        del flipped
        same = copy.deepcopy(baseline)
        assert comparison.judge(baseline, same).findings() == []
        del same
