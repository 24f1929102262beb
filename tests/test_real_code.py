"""Where an SGLang SUT carries TorchNativeAttnBackend, torch_native cells drive that real code
(backends/real_code.py), and its bytes are judged against the model's."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from backends.registry import BACKENDS
from harness.compare.verdict import judge_candidate
from harness.plan.candidate import Candidate
from harness.run.baselines import decide, run_baselines
from harness.run.execute import execute
from harness.sut.load.sglang_loader import SutLoadError, load_release, load_sglang
from reports.outcome import Outcome
from tests.conftest import scenario_named, skip_unless_installed

pytestmark = pytest.mark.sglang

TORCH_NATIVE = BACKENDS["torch_native"]


@pytest.fixture(scope="module")
def sglang():
    try:
        return load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")


def _verdict(module, pool: str, name: str, mode: str = "extend"):
    scenario = scenario_named(pool, "bf16", name)
    candidate = Candidate("sglang", module, "current", "-", "cpu", "torch_native", mode)
    baselines = run_baselines(scenario, TORCH_NATIVE, mode, ("current",), 30.0)
    return judge_candidate(baselines, "current", execute(candidate, scenario, 30.0, TORCH_NATIVE))


def _with_class(sglang, cls) -> object:
    module = copy.copy(sglang)
    module.real_backends = {"torch_native": cls}
    return module


def test_the_loader_carries_the_release_class(sglang):
    assert sglang.real_backends["torch_native"].__name__ == "TorchNativeAttnBackend"
    # Only the backends whose file the installed (current-era) release no longer has are
    # missing: cutlass_mla and tokenspeed_mla, 0.5.12 to 0.5.14 only.
    gone = {name for name in REAL_CODE_BACKENDS if "current" not in BACKENDS[name].eras}
    assert set(load_release().real_code_missing) == gone == {"cutlass_mla", "tokenspeed_mla"}


@pytest.mark.parametrize(
    "pool, name, mode",
    [
        ("mha", "prefill", "extend"),
        ("swa_mha", "small-cross", "extend"),
        ("mla", "decode", "decode"),
    ],
)
def test_the_release_code_writes_what_the_model_writes(sglang, pool, name, mode):
    assert _verdict(sglang, pool, name, mode).outcome is Outcome.PASS


def test_a_fault_in_the_release_class_is_a_finding_so_the_real_code_is_what_ran(sglang):
    real = sglang.real_backends["torch_native"]

    class Untranslated(real):  # the SWA loc left as the full loc, as if the translation were lost
        def init_forward_metadata(self, forward_batch):
            super().init_forward_metadata(forward_batch)
            if self.swa_out_cache_loc is not None:
                self.swa_out_cache_loc = forward_batch.out_cache_loc

    verdict = _verdict(_with_class(sglang, Untranslated), "swa_mha", "prefill")
    assert verdict.outcome is Outcome.FINDING, verdict
    # Without the class, the same module runs the call-site model and passes.
    assert _verdict(_with_class(sglang, None), "swa_mha", "prefill").outcome is Outcome.PASS


def test_what_the_driver_does_not_provide_is_a_skip_naming_it_never_a_finding(sglang):
    real = sglang.real_backends["torch_native"]

    # A release nobody named, reading a ForwardBatch field the driver lacks: one the release's
    # class declares without a default (a defaulted one reads as its default: test_release_batch).
    class ReadsMore(real):
        def init_forward_metadata(self, forward_batch):
            _ = forward_batch.input_ids
            super().init_forward_metadata(forward_batch)

    scenario = scenario_named("mha", "bf16", "prefill")
    module = _with_class(sglang, ReadsMore)
    candidate = Candidate("sglang", module, "current", "-", "cpu", "torch_native")
    baselines = run_baselines(scenario, TORCH_NATIVE, "extend", ("current",), 30.0)
    verdict = decide(baselines, candidate, execute(candidate, scenario, 30.0, TORCH_NATIVE))
    assert verdict.outcome is Outcome.SKIPPED
    assert verdict.skip_reason.startswith(
        "real-code driver: the release's backend reads forward_batch.input_ids"
    )


def test_the_metadata_is_built_from_the_padded_loc_and_the_write_takes_the_narrowed_one(sglang):
    real = sglang.real_backends["torch_native"]
    seen = {}

    class Recording(real):
        def init_forward_metadata(self, forward_batch):
            seen["metadata"] = len(forward_batch.out_cache_loc)
            super().init_forward_metadata(forward_batch)

        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
            seen["write"] = len(forward_batch.out_cache_loc)
            return super().forward_extend(q, k, v, layer, forward_batch, save_kv_cache)

    scenario = scenario_named("swa_mha", "bf16", "small-narrowed")
    forward = scenario.forwards[0]
    assert _verdict(_with_class(sglang, Recording), "swa_mha", "small-narrowed").outcome in (
        Outcome.PASS,
        Outcome.KNOWN_DIVERGENCE,
    )
    assert seen == {"metadata": len(forward.loc), "write": forward.tokens}
    assert forward.tokens < len(forward.loc)  # the scenario does narrow


def test_a_missing_attribute_is_a_driver_gap_even_through_getattr_with_a_default():
    from backends.real_code import DriverGap, _StandIn

    batch = _StandIn("forward_batch", out_cache_loc=None)
    with pytest.raises(DriverGap, match="reads forward_batch.spec_info"):
        getattr(batch, "spec_info", None)  # a release's default path must not be taken quietly
    with pytest.raises(DriverGap):
        hasattr(batch, "spec_info")
    assert getattr(batch, "__deepcopy__", None) is None  # dunder probes are plain misses


REAL_CODE_BACKENDS = [name for name, entry in BACKENDS.items() if entry.real_code is not None]


def test_every_declared_backend_imports_and_runs_as_release_code_on_the_installed_release(
    sglang, tmp_path, capsys
):
    from harness.cli import main

    missing = load_release().real_code_missing
    # cutlass_mla and tokenspeed_mla have no file in the installed (current-era) release.
    current = [name for name in REAL_CODE_BACKENDS if "current" in BACKENDS[name].eras]
    assert sorted(sglang.real_backends) == sorted(current), missing
    assert len(REAL_CODE_BACKENDS) >= 10
    status = main(
        [
            "run",
            "--sut",
            "sglang",
            "--backend",
            ",".join(REAL_CODE_BACKENDS),
            "--out",
            str(tmp_path),
        ]
    )
    output = capsys.readouterr()
    assert status == 0, output.out[-3000:]
    assert "0 with findings" in output.out
    # Release code is what wrote: no cell of these backends is a driver gap.
    assert "real-code driver" not in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_the_older_release_runs_the_same_backends_as_release_code(tmp_path, capsys):
    from harness.cli import main

    skip_unless_installed("sglang==0.5.14")
    status = main(["matrix", "--sut", "sglang==0.5.14", "--out", str(tmp_path / "matrix.json")])
    text = capsys.readouterr().out
    assert status == 0
    # 0.5.14 has no hpc_ops, qsa or cutedsl_mla file: those rows say "no file here", uncounted.
    assert "## Backends on sglang==0.5.14 (version 0.5.14): 17 of the 20" in text
    status = main(
        [
            "run", "--sut", "sglang==0.5.14", "--backend", ",".join(REAL_CODE_BACKENDS),
            "--out", str(tmp_path),
        ]
    )  # fmt: skip
    output = capsys.readouterr()
    assert status == 0, output.out[-3000:]
    assert "0 with findings" in output.out
    assert "real-code driver" not in (tmp_path / "summary.md").read_text()
    # What 0.5.14 does not have cannot apply there: its MHATokenToKVPool reads no
    # SGLANG_USE_HND_KVCACHE (built with it, its key buffer is still token-major rows). A layout
    # that only builds on another platform (aiter's 5-D, ROCm's) stays a skip with its reason.
    rows = pd.concat(pd.read_parquet(path) for path in tmp_path.glob("check-*.parquet"))
    rows = rows[rows["sut"] == "sglang==0.5.14"]  # not the era table's rows of the models
    hnd = rows[rows["pool"] == "mha_hnd"]
    assert len(hnd) and (hnd["skip_kind"] == "not_offered").all()
    assert hnd["detail"].str.contains("does not take SGLANG_USE_HND_KVCACHE").all()
    aiter5d = rows[rows["pool"] == "mha_aiter5d"]
    assert len(aiter5d) and (aiter5d["skip_kind"] == "skipped").all()
    assert aiter5d["detail"].str.contains("builds no 5-D layout on this machine").all()


def test_kvh_matrix_says_which_backends_run_as_release_code_and_why_the_others_do_not(sglang):
    from harness.cli.matrix import real_code_rows
    from harness.sut.load.loader import LoadedSut

    loaded = LoadedSut("sglang", sglang, "current")
    loaded = LoadedSut("sglang", sglang, "current", real_code=tuple(sglang.real_backends))
    rows = {row["backend"]: row for row in real_code_rows(loaded)}
    assert rows["triton"]["runs_as"] == "release code"
    assert "TritonAttnBackend" in rows["triton"]["why"]
    assert "decode" in rows["intel_amx"]["why"]  # its decode store is a kernel: the model there
    assert rows["hpc_ops"]["runs_as"] == "release code"  # `hpc` stood in, the layer it accepts
    # ascend's module imports with torch_npu stood in; its MLA kinds run the model.
    assert rows["ascend"]["runs_as"] == "release code"
    assert (
        "the model on mla" in rows["ascend"]["why"]
        and "extend_prefix_lens_cpu" in rows["ascend"]["why"]
    )
    assert rows["cp"]["runs_as"] == "model" and rows["cp"]["why"]


def test_a_stand_in_called_before_the_write_is_a_driver_gap_and_attention_after_it_never_runs(
    sglang,
):
    real = sglang.real_backends["torch_native"]
    attended = []

    class AttendsAfter(real):
        def _run_sdpa_forward_extend(self, *args, **kwargs):
            attended.append(True)

    verdict = _verdict(_with_class(sglang, AttendsAfter), "mha", "prefill")
    assert verdict.outcome is Outcome.PASS and attended == []

    from backends.real_code import StandInUsed

    class KernelFirst(real):
        def forward_extend(self, *args, **kwargs):
            raise StandInUsed("sgl_kernel.fused_store (a kvwrite-harness stand-in)")

    scenario = scenario_named("mha", "bf16", "prefill")
    candidate = Candidate(
        "sglang", _with_class(sglang, KernelFirst), "current", "-", "cpu", "torch_native"
    )
    baselines = run_baselines(scenario, TORCH_NATIVE, "extend", ("current",), 30.0)
    verdict = decide(baselines, candidate, execute(candidate, scenario, 30.0, TORCH_NATIVE))
    assert verdict.outcome is Outcome.SKIPPED
    assert "calls sgl_kernel.fused_store" in verdict.skip_reason


def test_a_forward_told_not_to_save_is_judged_on_the_doors_it_calls(sglang):
    """Told not to save, the release's forward goes on to its attention: what that raises on
    the driver's stand-ins is no write (PASS), while a door it calls anyway is a finding, also
    where the door itself raises."""
    real = sglang.real_backends["torch_native"]
    assert _verdict(sglang, "mha", "unsaved-layer").outcome is Outcome.PASS

    class Attends(real):
        def forward_extend(self, *args, **kwargs):
            raise RuntimeError("attention on the driver's stand-ins")

    assert _verdict(_with_class(sglang, Attends), "mha", "unsaved-layer").outcome is Outcome.PASS

    class SavesAnyway(real):
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            return super().forward_extend(q, k, v, layer, forward_batch, True, **kwargs)

    class BadLocAnyway(real):
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
            self.token_to_kv_pool.set_kv_buffer(layer, forward_batch.out_cache_loc[:1], k, v)

    for cls, oracle in ((SavesAnyway, "untouched"), (BadLocAnyway, "exception")):
        verdict = _verdict(_with_class(sglang, cls), "mha", "unsaved-layer")
        assert verdict.outcome is Outcome.FINDING, (cls.__name__, verdict)
        assert verdict.findings[0].oracle == oracle, verdict.findings[0].headline()


def test_a_finding_on_release_code_names_the_release_frames_of_its_write_call(sglang):
    real = sglang.real_backends["torch_native"]

    class Untranslated(real):
        def init_forward_metadata(self, forward_batch):
            super().init_forward_metadata(forward_batch)
            if self.swa_out_cache_loc is not None:
                self.swa_out_cache_loc = forward_batch.out_cache_loc

    verdict = _verdict(_with_class(sglang, Untranslated), "swa_mha", "prefill")
    assert verdict.outcome is Outcome.FINDING
    assert "torch_native_backend.py:" in verdict.findings[0].release_site
    assert "in forward_extend" in verdict.findings[0].headline()


def _verdict_of(module, backend: str, pool: str, dtype: str, name: str, census: str = ""):
    entry = BACKENDS[backend]
    scenario = scenario_named(pool, dtype, name)
    candidate = Candidate(
        "sglang", module, "current", "-", "cpu", backend, "extend", census_evidence=census
    )
    baselines = run_baselines(scenario, entry, "extend", ("current",), 30.0)
    return decide(baselines, candidate, execute(candidate, scenario, 30.0, entry))


def _intel_amx_writing(sglang, scales):
    """The release's intel_amx class, with the extend write of 0.5.15-0.5.18 (no scales on fp8)
    or with other scales: what `scales(layer)` returns is passed."""
    real = sglang.real_backends["intel_amx"]
    KVWriteLoc = sglang.KVWriteLoc

    class Older(real):
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True, sinks=None):
            loc = KVWriteLoc(forward_batch.out_cache_loc, self.swa_out_cache_loc)
            self.token_to_kv_pool.set_kv_buffer(layer, loc, k, v, *scales(layer))

    module = copy.copy(sglang)
    module.real_backends = {"intel_amx": Older}
    return module


def test_release_code_that_predates_a_changed_behaviour_of_its_era_writes_as_the_truth(sglang):
    # 0.5.23's intel_amx passes k_scale_float on fp8 (a CHANGED divergence of the current era);
    # a release whose own call site does not yet (0.5.15-0.5.18) writes as the ground truth.
    # The census saw the call site differ from the current model, as it does on those releases.
    census = "intel_amx_backend.py: set_kv_buffer(KVWriteLoc(cache_loc, swa_loc)) (planted)"
    older = _intel_amx_writing(sglang, lambda layer: ())
    verdict = _verdict_of(older, "intel_amx", "mha", "fp8_e4m3", "small-scaled", census)
    assert verdict.outcome is Outcome.PASS, verdict
    # Where the census saw the current model's call site, the same bytes are a finding: a
    # release that reverts the change is not excused.
    verdict = _verdict_of(older, "intel_amx", "mha", "fp8_e4m3", "small-scaled")
    assert verdict.outcome is Outcome.FINDING, verdict
    # Release code that writes neither way is a finding either way.
    doubled = _intel_amx_writing(
        sglang, lambda layer: (2 * layer.k_scale_float, 2 * layer.v_scale_float)
    )
    verdict = _verdict_of(doubled, "intel_amx", "mha", "fp8_e4m3", "small-scaled", census)
    assert verdict.outcome is Outcome.FINDING, verdict
