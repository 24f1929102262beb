"""Harness-caused errors are never findings (harness/compare/error_causes.py): each kind planted in
a fixture SUT is a skip with its reason through the real runner, and a genuine AttributeError on
the SUT's own object stays a finding."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from backends.context import ForwardBatch
from backends.real_code import DriverGap, StandInUsed
from harness.compare.error_causes import HARNESS_CAUSES, cause_named, harness_cause
from harness.compare.snapshot import Execution
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.deterministic import run
from harness.sut.worker.protocol import decode_execution, encode_execution
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from tests.conftest import FIXTURES, scenario_named


def _raised(action) -> BaseException:
    try:
        action()
    except Exception as error:  # noqa: BLE001 (the exception is what the test looks at)
        return error
    raise AssertionError("the action did not raise")


def _cause(action) -> str:
    cause = harness_cause(_raised(action))
    return cause.name if cause is not None else ""


def _read(obj: object, name: str):
    return lambda: getattr(obj, name)


def test_an_attribute_the_harness_did_not_give_its_own_objects_is_the_harness_s():
    batch = ForwardBatch(out_cache_loc=None)
    assert _cause(_read(batch, "kv_write_plan")) == "harness-built object"
    assert _cause(_read(SimpleNamespace(), "spec_info")) == "harness-built object"


def test_an_attribute_missing_on_the_sut_s_own_objects_is_the_sut_s():
    class ReleasePool:  # a class of the release, not of the harness's packages
        pass

    assert _cause(_read(ReleasePool(), "not_there")) == ""
    # The builtin SUT's pools live in pools/: their own attributes are a SUT's, not the harness's.
    pool_class = builtin_module("current", "torch").MHATokenToKVPool
    assert pool_class.__module__.startswith("pools.")
    assert _cause(_read(pool_class.__new__(pool_class), "not_there")) == ""
    assert _cause(lambda: [].not_there) == ""


def test_each_other_kind_is_named_by_its_record():
    def missing_module():
        import some_module_that_does_not_exist  # noqa: F401

    assert _cause(missing_module) == "import here"
    # Raised where Triton finds no driver, as on a machine without a GPU; but not elsewhere in
    # the same file, nor from a CUDA call once a device started.
    assert _cause(_from("/x/triton/runtime/driver.py", "_create_driver")) == "GPU-only kernel"
    assert _cause(_from("/x/torch/cuda/__init__.py", "_lazy_init")) == "GPU-only kernel"
    assert _cause(_from("/x/triton/runtime/driver.py", "active")) == ""
    assert _cause(_from("/x/torch/cuda/__init__.py", "synchronize")) == ""
    assert _cause(lambda: _raise(StandInUsed("sgl_kernel.x (a stand-in)"))) == "stand-in called"
    assert _cause(lambda: _raise(DriverGap("reads layer.x"))) == "real-code driver"
    # A cause the release raised from keeps its kind; an unrelated error does not acquire one.
    assert _cause(lambda: _raise(ValueError("wrapped"), StandInUsed("k"))) == "stand-in called"
    assert _cause(lambda: _raise(ValueError("the release's own"))) == ""
    assert all(cause_named(cause.name) is cause for cause in HARNESS_CAUSES)


def _raise(error: BaseException, cause: BaseException | None = None) -> None:
    raise error from cause


def _from(filename: str, function: str):
    """A function named `function` in `filename` that raises, as a GPU runtime's would."""
    scope: dict = {}
    source = f"def {function}():\n    raise RuntimeError('0 active drivers ([]).')\n"
    exec(compile(source, filename, "exec"), scope)
    return scope[function]


def test_the_cause_travels_through_the_worker_protocol():
    sent = Execution(error="ModuleNotFoundError: x", error_at="forward 0, layer 0")
    sent.error_cause = "import here"
    travelled = decode_execution(json.loads(json.dumps(encode_execution(sent, "all"))))
    assert travelled.error_cause == "import here"


def _results(fixture: str) -> list:
    """The fixture SUT's mha/bf16 cells through the plain call site, as `kvh run` runs them."""
    options = RunOptions(
        suts=[str(FIXTURES / f"{fixture}.py")],
        pools=["mha"],
        dtypes=["bf16"],
        backends=["plain"],
        scenarios=[scenario_named("mha", "bf16", name) for name in ("prefill", "decode")],
        era_table=False,
    )
    results: list = []
    run(options, resolve_suts(options), results.append)
    rows = [r for r in results if r.candidate is not None and r.candidate.sut != "builtin"]
    assert rows, f"no candidate of {fixture} ran"
    return rows


@pytest.mark.parametrize(
    "fixture, cause, says",
    [
        ("harness_field_missing", "harness-built object", "'Layer' object has no attribute"),
        ("harness_gpu_module", "import here", "some_module_that_does_not_exist"),
        ("harness_standin_called", "stand-in called", "sgl_kernel.kvcacheio.transfer_kv_per_layer"),
        # Issue 39's refactor: the release's KVWriteLoc.for_batch reads a new ForwardBatch field.
        ("harness_batch_field_missing", "harness-built object", "'ForwardBatch' object has no"),
    ],
)
def test_a_harness_caused_raise_is_a_skip_with_its_reason_never_a_finding(fixture, cause, says):
    rows = _results(fixture)
    assert all(r.outcome is Outcome.SKIPPED for r in rows), [r.outcome for r in rows]
    for row in rows:
        assert row.findings == []
        assert row.skip.reason.startswith(f"{cause}: ") and says in row.skip.reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA here the door's device starts")
def test_a_door_that_needs_a_gpu_is_a_skip_where_there_is_none():
    rows = _results("harness_needs_cuda")
    assert all(r.outcome is Outcome.SKIPPED for r in rows), [r.outcome for r in rows]
    assert all(r.skip.reason.startswith("GPU-only kernel: ") for r in rows)
    assert "CUDA" in rows[0].skip.reason  # torch's own words: not compiled with it, or no driver


def test_a_genuine_attribute_error_in_the_sut_s_own_door_is_a_finding():
    rows = _results("own_attribute_error")
    assert all(r.outcome is Outcome.FINDING for r in rows), [r.outcome for r in rows]
    finding = rows[0].findings[0]
    assert finding.oracle == "exception" and finding.door == "set_kv_buffer"
    assert "'MHATokenToKVPool' object has no attribute 'not_there'" in finding.message


def test_a_worker_decides_the_cause_where_it_raised_and_the_verdict_is_a_skip():
    """A release in its own process (kvh sut install's environments): the cause is decided in the
    worker, where the exception object is, and only its name travels back."""
    from backends.registry import backend_named
    from harness.plan.candidate import Candidate
    from harness.run.baselines import decide, run_baselines
    from harness.sut.worker.client import IsolatedSut

    scenario = scenario_named("mha", "bf16", "prefill")
    baselines = run_baselines(scenario, backend_named("plain"), "extend", ("current",), 30.0)
    with IsolatedSut("harness_gpu_module", prefix=str(FIXTURES)) as sut:
        got = sut.execute(scenario, "plain", "extend", "cpu", known=baselines.truth)
    assert got.error_type == "ModuleNotFoundError" and got.error_cause == "import here"
    candidate = Candidate("harness_gpu_module", None, "current", "-", "cpu", "plain")
    verdict = decide(baselines, candidate, got)
    assert verdict.outcome is Outcome.SKIPPED
    assert verdict.skip_reason.startswith("import here: the release imports a module")


def test_a_release_s_new_batch_field_reads_its_own_default_and_every_write_is_judged():
    rows = _results("release_batch_new_field")
    assert all(r.outcome is Outcome.PASS for r in rows), [(r.outcome, r.skip) for r in rows]


def test_a_field_the_sut_s_batch_declares_without_a_default_is_the_harness_s_gap():
    import importlib.util

    from backends.release_batch import forward_batch
    from harness.compare.error_causes import harness_built

    spec = importlib.util.spec_from_file_location(
        "batch_fixture", FIXTURES / "release_batch_new_field.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    batch = forward_batch(module, out_cache_loc=torch.arange(3), token_to_kv_pool=None)
    assert type(batch) is module.ForwardBatch and batch.kv_write_plan is None  # its default
    assert batch.out_cache_loc_is_physical is True  # the scenario's data over the default
    with pytest.raises(AttributeError) as raised:
        batch.forward_mode  # noqa: B018 - declared without a default, and no scenario gives it
    assert harness_built(raised.value.obj)
