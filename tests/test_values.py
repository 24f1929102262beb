"""The value oracle (harness/compare/values.py): the builtin engines and the judge pass it on the
builtin scenarios it covers, and a cast fault shared by the reference and the torch engine, which
the bytes oracle cannot see, is caught by it."""

from __future__ import annotations

import pytest
import torch

from backends.registry import BACKENDS
from harness.compare.expectations import Expected
from harness.compare.snapshot import Execution
from harness.compare.values import OUT_OF_SCOPE, VALUE_SCOPE, in_scope, value_findings
from harness.plan.candidate import Candidate
from harness.run.execute import execute
from pools.builtin.engines.base import StoreEngine
from pools.builtin.sut import builtin_module
from pools.dtypes import DTYPES
from pools.judge import judge_module
from scenarios.defaults import default_scenarios
from scenarios.model import BASE_POOL_KINDS, POOL_KINDS
from tests.conftest import scenario_named


def run(module, era: str, engine: str, backend: str, scenario) -> Execution:
    return execute(Candidate(engine, module, era, engine, "cpu", backend, "extend"), scenario)


def covered(pools):
    """(scenario, backend) for every builtin scenario the registry runs on plain/plain_mla: only
    the (kind, dtype) cells a backend plans (Backend.judges)."""
    for pool in pools:
        for dtype in DTYPES:
            for scenario in default_scenarios(pool, dtype, seed=0):
                for name in VALUE_SCOPE:
                    backend = BACKENDS[name]
                    if backend.judges(pool, dtype) and backend.skip_for(scenario, "extend") is None:
                        yield scenario, name


def test_scope_is_every_pool_kind_but_fp4():
    scoped = {pool for scope in VALUE_SCOPE.values() for pool in scope.pools}
    assert scoped | set(OUT_OF_SCOPE) == set(POOL_KINDS)
    assert not scoped & set(OUT_OF_SCOPE)


@pytest.mark.parametrize("pool", BASE_POOL_KINDS)
@pytest.mark.parametrize("engine", ["reference", "torch"])
def test_builtin_engines_hold_the_values_the_scenario_implies(pool, engine):
    """The oldest and the newest era: the values do not depend on the era, only which writes
    raise does (tests/test_judge.py compares every era's executions)."""
    checked = 0
    for scenario, backend in covered([pool]):
        expected = Expected(scenario)
        for era in ("legacy", "current"):
            execution = run(builtin_module(era, engine), era, engine, backend, scenario)
            assert value_findings(scenario, execution, expected, backend) == [], (
                scenario.name,
                era,
            )
            checked += execution.error is None
    assert checked > 0


@pytest.mark.parametrize("pool", [pool for pool in POOL_KINDS if pool not in OUT_OF_SCOPE])
def test_judge_holds_the_values_the_scenario_implies(pool):
    checked = 0
    for scenario, backend in covered([pool]):
        execution = run(judge_module("current"), "current", "judge", backend, scenario)
        assert value_findings(scenario, execution, Expected(scenario), backend) == [], scenario.name
        checked += 1
    assert checked > 0


def test_out_of_scope_and_raised_executions_give_no_finding():
    scenario = scenario_named("mha_fp4", "bf16", "prefill")
    execution = run(judge_module("current"), "current", "judge", "plain", scenario)
    assert not in_scope(scenario, "plain")
    assert value_findings(scenario, execution, Expected(scenario), "plain") == []
    mha = scenario_named("mha", "bf16", "prefill")
    assert not in_scope(mha, "fa3")
    raised = Execution(error="IndexError: 16 slots for 9 rows", error_at="forward 0, layer 1")
    assert value_findings(mha, raised, Expected(mha), "plain") == []


def _round_toward_zero(prepare):
    """A planted fault in the shared cast path (pools/builtin/engines/base.py, used by the
    reference and the torch engine alike): casts truncate instead of rounding to nearest even."""

    def faulty(self, values, scale, dtype, store_dtype):
        source = values
        result = prepare(self, values, scale, dtype, store_dtype)
        if source.dtype == dtype:
            return result
        cast = result.view(dtype)
        overshoot = cast.to(torch.float64).abs() > source.to(torch.float64).abs()
        bits = cast.view(torch.int16 if cast.element_size() == 2 else torch.uint8)
        bits = torch.where(overshoot & (cast.to(torch.float32) != 0), bits - 1, bits)
        return bits.view(dtype).view(store_dtype) if store_dtype != dtype else bits.view(dtype)

    return faulty


@pytest.mark.parametrize(
    "pool, dtype, name",
    [
        ("mha", "fp8_e4m3", "prefill"),
        ("mha", "bf16", "scaled-float"),
        ("swa_mha", "fp8_e5m2", "decode"),
        ("mla", "fp8_e4m3", "prefill"),
        ("swa_mla", "fp16", "scaled-tensor"),
    ],
)
def test_a_cast_fault_shared_by_reference_and_torch_engine_is_caught(
    monkeypatch, pool, dtype, name
):
    monkeypatch.setattr(StoreEngine, "prepare", _round_toward_zero(StoreEngine.prepare))
    scenario = next(s for s in default_scenarios(pool, dtype, seed=0) if s.name == name)
    assert scenario.input_dtype is not None or DTYPES[dtype].is_fp8  # the write casts
    expected, backend = Expected(scenario), "plain"
    reference = run(builtin_module("legacy", "reference"), "legacy", "reference", backend, scenario)
    torch_engine = run(builtin_module("legacy", "torch"), "legacy", "torch", backend, scenario)
    assert reference.error is None and torch_engine.error is None
    # The bytes oracle compares the two: they agree, so it sees nothing.
    assert all(
        torch.equal(reference.buffers[n], torch_engine.buffers[n]) for n in reference.buffers
    )
    for execution in (reference, torch_engine):
        findings = value_findings(scenario, execution, expected, backend)
        assert len(findings) == 1 and findings[0].oracle == "value"
        finding = findings[0]
        assert finding.slot in expected[finding.buffer] and finding.written_by.startswith(
            "forward "
        )
        assert finding.expected != finding.actual
    # The judge has its own casts: the fault is not in it.
    judged = run(judge_module("legacy"), "legacy", "judge", backend, scenario)
    assert value_findings(scenario, judged, expected, backend) == []
