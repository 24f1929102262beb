"""Each named regression scenario cites its PR and passes on the builtin pools in every era."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.plan.baseline import baseline_for
from harness.plan.candidates import candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.cells import check_scenario
from scenarios.regressions import REGRESSIONS
from scenarios.serialize import from_dict, to_dict, validate


@pytest.mark.parametrize("regression", REGRESSIONS, ids=lambda r: r.name)
def test_regression_scenario_passes_on_builtin_pools(regression):
    # A PR, or where none names the fix, the releases that had the bug.
    assert regression.pr.startswith(("#", "no PR (")) and regression.bug
    scenario = regression.scenario()
    validate(scenario)
    assert from_dict(to_dict(scenario)) == scenario
    options = RunOptions(engines=["reference", "torch"])
    # The canonical call, or for a draft's commit the one call site that makes it.
    backend = next(
        BACKENDS[name]
        for name in ("plain", "dspark")
        if not BACKENDS[name].skip_for(scenario, "extend")
    )
    candidates = list(candidates_for(backend, "extend", resolve_suts(options), options))
    results = check_scenario(scenario, baseline_for(backend, "extend"), candidates, 30.0)
    assert {r.outcome for r in results} <= {"pass", "known_divergence"}
    assert len(results) == len(candidates)
