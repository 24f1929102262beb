"""Capabilities are probed from what a module offers, and name the era whose call sites fit."""

from __future__ import annotations

import importlib
import importlib.util
import types
from dataclasses import dataclass

import pytest
import torch

from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import load_foreign
from harness.sut.probe.capabilities import probe
from harness.sut.probe.detect import describe, era_of, missing_constructors
from harness.sut.probe.source_capabilities import probe_source
from pools.builtin.eras import ERAS
from pools.builtin.sut import builtin_module
from tests.conftest import FIXTURES, SGLANG_INSTALL_HINT, installed_sglang_root


@pytest.mark.parametrize("era", list(ERAS))
def test_builtin_pools_amount_to_their_own_era(era):
    caps = probe(builtin_module(era, "reference"))
    assert era_of(caps) == (era, [])
    assert caps.unknown == ()
    assert caps.write_loc is (era in ("bundled", "current"))
    assert caps.swa_loc_keyword is (era == "kwarg")


@pytest.mark.parametrize("era", list(ERAS))
def test_mutant_base_modules_amount_to_their_own_era(era):
    caps = probe(importlib.import_module(f"mutants.base_{era}"))
    assert era_of(caps) == (era, [])


def test_current_capabilities_in_detail():
    caps = probe(builtin_module("current", "reference"))
    assert caps.write_loc_fields == ("loc", "swa_loc", "full_loc", "physical")
    assert (caps.for_layer, caps.for_batch, caps.cuts_to_loc_len) == (True, True, True)
    assert caps.unwrap_arity == 3
    assert probe(builtin_module("bundled", "reference")).unwrap_arity == 2
    assert probe(builtin_module("bundled", "reference")).cuts_to_loc_len is False


def _fixture(name: str) -> types.ModuleType:
    return load_foreign(str(FIXTURES / f"{name}.py")).module


def test_full_loc_without_for_layer_is_current_with_its_constructors_composed_out():
    caps = probe(_fixture("write_loc_no_for_layer"))
    assert era_of(caps) == ("current", [])
    assert missing_constructors(caps) == {"for_layer", "for_batch"}
    assert describe(caps)[-1] == (
        "era: current (no KVWriteLoc.for_batch/for_layer: its call sites build KVWriteLoc directly)"
    )


def test_full_loc_with_a_two_value_unwrap_fits_no_modelled_convention():
    caps = probe(_fixture("write_loc_unfit"))
    era, missing = era_of(caps)
    assert era is None
    assert missing == [
        "KVWriteLoc has a third field (full_loc), but its unwrap helper returns 2 values: the "
        "`current` pools unpack (loc, swa_loc, full_loc)"
    ]
    assert describe(caps)[-1].startswith(
        "era: fits no modelled call convention; missing: KVWriteLoc has a third field"
    )


def test_a_probe_that_fails_is_unknown_with_its_reason_never_raised():
    @dataclass
    class KVWriteLoc:
        loc: torch.Tensor
        swa_loc: torch.Tensor = None

        def __post_init__(self):
            raise RuntimeError("refuses every loc")

    base = builtin_module("bundled", "reference")
    module = types.SimpleNamespace(**{**vars(base), "KVWriteLoc": KVWriteLoc})
    caps = probe(module)
    assert caps.cuts_to_loc_len is None
    assert "RuntimeError: refuses every loc" in caps.reason_unknown("cuts_to_loc_len")
    era, missing = era_of(caps)
    assert era is None and "unwrap helper returns unknown" in missing[0]


def _launch(*args):  # stands for a Triton kernel object: `_kernel[grid](...)` is the launch
    pass


_kernel = {(1,): _launch}


class _GpuOnlyMLA:
    def set_mla_kv_buffer(self, layer, loc, nope, rope):
        if nope.dtype == torch.uint8:
            _kernel[(1,)](loc, nope)
        else:
            self._scatter(loc, nope, rope)

    def _scatter(self, loc, nope, rope):
        _kernel[(1,)](loc, nope, rope)


class _TorchFallbackMLA(_GpuOnlyMLA):
    def _scatter(self, loc, nope, rope):
        if not torch.cuda.is_available():
            self.rows[loc] = nope
            return
        _kernel[(1,)](loc, nope, rope)


@pytest.mark.parametrize("cls, needs_gpu", [(_GpuOnlyMLA, True), (_TorchFallbackMLA, False)])
def test_mla_door_needs_gpu_is_read_from_the_source_of_every_path(cls, needs_gpu):
    base = builtin_module("current", "reference")
    module = types.SimpleNamespace(**{**vars(base), "MLATokenToKVPool": cls})
    assert probe(module).mla_door_needs_gpu is needs_gpu


@pytest.mark.sglang
def test_source_probe_of_the_installed_release_reads_the_current_era():
    root = installed_sglang_root()
    if root is None:
        pytest.skip(SGLANG_INSTALL_HINT)
    caps = probe_source(root)
    assert era_of(caps) == ("current", [])
    assert (caps.swa_over_mla, caps.physical_check, caps.mla_door_needs_gpu) == (True, True, False)


def test_source_probe_of_a_folder_without_pools_is_unknown(tmp_path):
    caps = probe_source(tmp_path)
    assert caps.write_loc is None and "no readable" in caps.reason_unknown("write_loc")
    assert era_of(caps)[0] is None


@pytest.mark.sglang
def test_real_sglang_is_probed_as_current():
    from harness.sut.load.sglang_loader import load_sglang

    try:
        module = load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang is not importable here: {error}")
    caps = probe(module)
    assert era_of(caps) == ("current", [])
    assert caps.write_loc_fields == ("loc", "swa_loc", "full_loc", "physical")
    assert (caps.cuts_to_loc_len, caps.unwrap_arity, caps.swa_over_mla) == (True, 3, True)
    assert (caps.mla_door_needs_gpu, caps.physical_check, caps.swa_loc_keyword) == (
        False,
        True,
        False,
    )
    assert caps.unknown == ()


def test_an_mla_door_that_needs_a_rope_tensor_is_probed_by_calling_it_and_explained():
    """0.5.14's set_mla_kv_buffer raises on k_rope=None: a probed capability whose declared
    divergence explains exactly that raise, never a finding against the release."""
    from backends.registry import BACKENDS
    from harness.plan.baseline import baseline_for
    from harness.plan.candidate import Candidate
    from harness.run.cells import check_scenario
    from reports.outcome import Outcome
    from scenarios.reach import reach_scenario

    assert probe(builtin_module("bundled", "torch")).mla_door_takes_no_rope is True
    loaded = load_foreign(str(FIXTURES / "mla_door_needs_rope.py"))
    assert loaded.capabilities.mla_door_takes_no_rope is False
    scenario = reach_scenario("mla", "bf16", 2**20, 0)
    scenario.input_dtype = "fp32"  # a cast: the fixture (and 0.5.14) then touch k_rope
    assert scenario.geometry.qk_rope_head_dim == 0
    backend = BACKENDS["fa3"]
    candidate = Candidate(
        loaded.spec, loaded.module, "bundled", "-", "cpu", "fa3", "extend", loaded.capabilities
    )
    [row] = check_scenario(scenario, baseline_for(backend, "extend"), [candidate], 30.0)
    assert row.outcome is Outcome.KNOWN_DIVERGENCE
    assert [d.name for d in row.divergences] == ["mla-door-needs-rope"]
    # The same raise from a SUT that probes as taking a missing rope is a finding.
    unprobed = Candidate(loaded.spec, loaded.module, "bundled", "-", "cpu", "fa3", "extend")
    [row] = check_scenario(scenario, baseline_for(backend, "extend"), [unprobed], 30.0)
    assert row.outcome is Outcome.FINDING
