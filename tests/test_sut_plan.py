"""A foreign SUT is planned from its probed capabilities: the era they amount to (or the call
conventions --era forces), the limits they bring, the divergences declared for them, and which of
the release's own call sites fit the model. None of it reads a version string."""

from __future__ import annotations

import inspect
import shutil
from dataclasses import replace
from types import SimpleNamespace

import pytest

from backends.divergences import DIVERGENCES
from backends.registry import BACKENDS
from harness.compare.findings import Finding
from harness.compare.snapshot import Execution
from harness.compare.verdict import _probed_with
from harness.plan.candidates import Skip, candidates_for
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice, close_suts, resolve_suts
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import LoadedSut
from harness.sut.probe.call_sites import absent_call_sites, unfit_call_sites
from harness.sut.probe.capabilities import Capabilities
from harness.sut.probe.limits import SUT_LIMITS, limit_before, limit_for
from pools.builtin.sut import builtin_module
from reports.outcome import SkipKind
from tests.conftest import FIXTURES, SGLANG_INSTALL_HINT, installed_sglang_root, scenario_named

UNFIT = str(FIXTURES / "write_loc_unfit.py")


def test_a_sut_that_fits_no_convention_alone_is_a_load_error_saying_what_is_missing():
    with pytest.raises(
        SutLoadError, match="fit no modelled call convention.*unwrap helper returns 2 values"
    ):
        resolve_suts(RunOptions(suts=[UNFIT]))


def test_beside_others_it_is_kept_with_the_reason_and_each_of_its_cells_is_a_skip():
    suts = resolve_suts(RunOptions(suts=["builtin:torch", UNFIT, "tests/fixtures/absent.py"]))
    assert [bool(sut.load_error) for sut in suts] == [False, True, True]
    items = list(candidates_for(BACKENDS["plain"], "extend", suts, RunOptions(), "mha", "bf16"))
    skips = [item for item in items if isinstance(item, Skip) and item.sut != "builtin"]
    assert [skip.sut for skip in skips] == [UNFIT, "tests/fixtures/absent.py"]
    assert "unwrap helper returns 2 values" in skips[0].reason
    assert "does not exist" in skips[1].reason
    assert any(not isinstance(item, Skip) for item in items)  # builtin:torch still runs


def test_era_forces_the_call_conventions_a_foreign_sut_is_driven_through():
    options = RunOptions(suts=[UNFIT], eras=["bundled", "current"], eras_named=True)
    (sut,) = resolve_suts(options)
    try:
        assert sut.eras == ("bundled", "current") and sut.loaded.era is None
        items = list(candidates_for(BACKENDS["fa3"], "extend", [sut], options, "swa_mha", "bf16"))
        assert [(item.era, type(item).__name__) for item in items] == [
            ("bundled", "Candidate"),
            ("current", "Candidate"),
        ]
        assert items[0].capabilities.for_layer is False
    finally:
        close_suts([sut])


def test_a_limit_skips_cells_where_the_probed_capability_brings_it_and_nowhere_else():
    no_swa_mla = Capabilities(mla_door_needs_gpu=False, swa_over_mla=False)
    assert limit_before(no_swa_mla, "swa_mla", "cuda").name == "no-swa-over-mla"
    assert limit_before(no_swa_mla, "mla", "cpu") is None
    assert limit_before(Capabilities(swa_over_mla=True), "swa_mla", "cpu") is None
    assert limit_before(None, "swa_mla", "cpu") is None  # builtin pools have no limits
    # A door's limit is never decided before the run: a cell may not use that door at all.
    assert limit_before(Capabilities(mla_door_needs_gpu=True), "mla", "cpu") is None


def _mla_candidate(capabilities: Capabilities, device: str = "cpu"):
    from harness.plan.candidate import Candidate

    return Candidate("x", None, "legacy", "-", device, "plain_mla", capabilities=capabilities)


def test_a_door_limit_explains_only_a_raise_through_its_door_on_a_device_without_the_kernel():
    scenario = scenario_named("mla", "bf16", "prefill")
    needs_gpu = _mla_candidate(Capabilities(mla_door_needs_gpu=True))
    kernel = "raised where the baseline did not: RuntimeError: 0 active drivers"
    through = Finding("exception", kernel, door="set_mla_kv_buffer")
    elsewhere = Finding("exception", kernel, door="set_kv_buffer")
    on_cuda = _mla_candidate(Capabilities(mla_door_needs_gpu=True), "cuda")
    able = _mla_candidate(Capabilities(mla_door_needs_gpu=False))
    wrong = Finding("exception", "raised ...: IndexError", door="set_mla_kv_buffer")
    assert limit_for(scenario, needs_gpu, [through]).name == "mla-door-needs-gpu"
    assert limit_for(scenario, needs_gpu, [elsewhere]) is None
    assert limit_for(scenario, on_cuda, [through]) is None
    assert limit_for(scenario, able, [through]) is None
    assert limit_for(scenario, needs_gpu, [wrong]) is None
    assert limit_for(scenario, needs_gpu, [through, through]) is None  # only a lone raise


def test_a_dtype_limit_explains_the_raise_of_its_dtype_s_cells_only():
    """0.5.20 and 0.5.21's QSA pool takes no indexer dtype: only the cells whose indexer is fp8
    (an fp8_e4m3 cache) are the limit, and the pool factory's refusal is what they raise."""
    from harness.plan.candidate import Candidate
    from harness.run.pool_factory import build_pool

    fp8, bf16 = (scenario_named("qsa", dtype, "prefill") for dtype in ("fp8_e4m3", "bf16"))
    base = builtin_module("current", "torch")

    def without_indexer_dtype(**kwargs):
        return base.QSATokenToKVPool(**kwargs)

    signature = inspect.signature(base.QSATokenToKVPool)
    without_indexer_dtype.__signature__ = signature.replace(
        parameters=[
            parameter
            for parameter in signature.parameters.values()
            if parameter.name != "qsa_indexer_dtype" and parameter.kind is not parameter.VAR_KEYWORD
        ]
    )

    older = SimpleNamespace(QSATokenToKVPool=without_indexer_dtype)
    with pytest.raises(TypeError) as refused:
        build_pool(older, fp8, "cpu")
    build_pool(older, bf16, "cpu")  # a bf16 indexer needs no keyword
    raised = Finding("exception", f"raised where the baseline did not: {refused.value}")
    bf16_only = Candidate(
        "x", None, "current", "-", "cpu", "qsa", capabilities=Capabilities(qsa_indexer_dtype=False)
    )
    able = replace(bf16_only, capabilities=Capabilities(qsa_indexer_dtype=True))
    assert limit_for(fp8, bf16_only, [raised]).name == "qsa-bf16-indexer-only"
    assert limit_for(bf16, bf16_only, [raised]) is None
    assert limit_for(fp8, able, [raised]) is None  # probed able: the raise is a finding
    assert limit_before(bf16_only.capabilities, "qsa", "cpu", "qsa") is None  # after the run


def test_an_unknown_capability_falls_back_to_the_limits_error_and_only_to_it():
    scenario = scenario_named("swa_mla", "bf16", "prefill")
    candidate = _mla_candidate(Capabilities(unknown=(("swa_over_mla", "no readable source"),)))
    build = Finding("exception", "raised where the baseline did not: building the pool: X")
    other = Finding("exception", "raised where the baseline did not: IndexError")
    assert limit_for(scenario, candidate, [build]).name == "no-swa-over-mla"
    assert limit_for(scenario, candidate, [other]) is None
    known = _mla_candidate(Capabilities(swa_over_mla=True))
    assert limit_for(scenario, known, [build]) is None  # probed able: the error is a finding
    assert {limit.capability for limit in SUT_LIMITS} <= set(Capabilities.__dataclass_fields__)


def test_a_divergence_declared_for_a_capability_applies_to_suts_that_probe_so():
    (no_unwrap,) = [d for d in DIVERGENCES if d.name == "mla-nope-rope-no-unwrap"]
    assert _probed_with(no_unwrap, Capabilities(mla_unwraps_write_loc=False))
    assert not _probed_with(no_unwrap, Capabilities(mla_unwraps_write_loc=True))
    assert not _probed_with(no_unwrap, Capabilities())  # unknown: not assumed
    assert not _probed_with(no_unwrap, None)  # builtin pools
    for divergence in DIVERGENCES:
        if divergence.capability is not None:
            assert divergence.capability[0] in Capabilities.__dataclass_fields__


def test_capabilities_travel_as_json_values_and_come_back_equal():
    caps = Capabilities(
        write_loc=True,
        write_loc_fields=("loc", "swa_loc"),
        unknown=(("swa_over_mla", "TypeError: x"),),
    )
    import json

    assert Capabilities.from_dict(json.loads(json.dumps(caps.to_dict()))) == caps


@pytest.fixture
def release_copy(tmp_path):
    root = installed_sglang_root()
    if root is None:
        pytest.skip(SGLANG_INSTALL_HINT)
    relative = "sglang/srt/layers/attention/torch_native_backend.py"
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    shutil.copy(root / relative, target)
    return tmp_path, target


def test_a_release_call_site_that_differs_from_the_model_is_named_with_file_and_line(
    release_copy,
):
    root, torch_native = release_copy
    assert ("torch_native", "current") not in unfit_call_sites(str(root), ["current"])
    source = torch_native.read_text()
    changed = source.replace(
        "KVWriteLoc(cache_loc, self.swa_out_cache_loc)", "KVWriteLoc(cache_loc)"
    )
    assert changed != source
    torch_native.write_text(changed)
    reasons = unfit_call_sites(str(root), ["current"])
    assert reasons["torch_native", "current"].startswith(
        "its torch_native call site is not the current model: "
        "sglang/srt/layers/attention/torch_native_backend.py:"
    )
    assert "no fa3 call site to check" in reasons["fa3", "current"]  # absent from this copy


def test_a_backend_whose_files_the_release_lacks_cannot_apply(release_copy):
    root, _ = release_copy  # a release tree holding torch_native's file alone
    absent = absent_call_sites(str(root))
    assert "torch_native" not in absent and {"fa3", "triton"} <= absent
    loaded = LoadedSut("sglang", builtin_module("current", "torch"), "current")
    unfit = unfit_call_sites(str(root), ["current"])
    choice = SutChoice("sglang", ("-",), loaded, unfit_sites=unfit, absent_sites=absent)
    (item,) = candidates_for(BACKENDS["fa3"], "extend", [choice], RunOptions(), "mha", "bf16")
    assert isinstance(item, Skip) and item.kind == SkipKind.NOT_OFFERED
    assert "no fa3 call site to check" in item.reason
    # A file it has whose call does not fit stays a skip: that is a check that could not run.
    unfit["torch_native", "current"] = "its torch_native call site is not the current model"
    choice = SutChoice("sglang", ("-",), loaded, unfit_sites=unfit, absent_sites=absent)
    (item,) = candidates_for(BACKENDS["torch_native"], "extend", [choice], RunOptions(), "mha")
    assert isinstance(item, Skip) and item.kind == SkipKind.SKIPPED


def test_a_backend_whose_call_site_does_not_fit_is_skipped_with_that_evidence():
    loaded = LoadedSut("sglang", builtin_module("current", "torch"), "current")
    unfit = {("torch_native", "current"): "its torch_native call site is not the current model"}
    choice = SutChoice("sglang", ("-",), loaded, unfit_sites=unfit)
    options = RunOptions()
    (item,) = candidates_for(BACKENDS["torch_native"], "extend", [choice], options, "mha", "bf16")
    assert isinstance(item, Skip) and item.reason == unfit["torch_native", "current"]
    (fits,) = candidates_for(BACKENDS["fa3"], "extend", [choice], options, "mha", "bf16")
    assert not isinstance(fits, Skip) and fits.era == "current"


def test_the_worker_reports_capabilities_and_runs_the_era_it_is_asked_for():
    from harness.sut.worker.client import IsolatedSut

    scenario = scenario_named("mha", "bf16", "prefill")
    with IsolatedSut(UNFIT) as worker:
        era, _ = worker.hello()
        assert era is None and "unwrap helper returns 2" in worker.described["unfit"]
        caps = Capabilities.from_dict(worker.described["capabilities"])
        assert caps.write_loc_fields == ("loc", "swa_loc", "full_loc")
        bare = worker.execute(scenario, "plain", "extend", "cpu", None, 30.0, era="legacy")
        assert isinstance(bare, Execution) and bare.error is None, bare.error
        # The bundled call site hands its pools a KVWriteLoc, which this one's MHA pool indexes
        # with as it is: the worker drove the convention it was asked for.
        bundled = worker.execute(scenario, "plain", "extend", "cpu", None, 30.0, era="bundled")
        assert "'KVWriteLoc' object has no attribute" in bundled.error


def test_a_missing_sut_folder_says_what_to_give_not_an_unrelated_install(tmp_path):
    from harness.sut.load.environments import not_ready_reason

    missing = not_ready_reason(f"sglang@{tmp_path / 'absent'}")
    assert "does not exist" in missing and "--target" in missing
    assert "requirements/sglang-cpu.txt" not in missing
    assert "holds no sglang/ package" in not_ready_reason(f"sglang@{tmp_path}")
    assert not_ready_reason("sglang==9.9.9").endswith("run: kvh sut install sglang==9.9.9")
