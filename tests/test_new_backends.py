"""The backends for 0.5.23's last unclaimed write files: torch_flex, wave, hpc_ops, cutedsl_mla.
What each call site hands the pool, and that each runs as release code."""

from __future__ import annotations

import pytest
import torch

from backends.registry import BACKENDS
from harness.sut.load.load_errors import SutLoadError
from tests.test_backends_doors import calls_of


@pytest.fixture(scope="module")
def sglang():
    from harness.sut.load.sglang_loader import load_sglang

    try:
        return load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")


@pytest.mark.parametrize("backend", ["torch_flex", "wave"])
@pytest.mark.parametrize("era", ["legacy", "kwarg", "bundled", "current"])
@pytest.mark.parametrize("mode", ["extend", "decode"])
def test_torch_flex_and_wave_pass_the_bare_loc_without_scales_in_every_era(backend, era, mode):
    calls = calls_of(backend, mode, era, "mha", "scaled")
    assert {call.method for call in calls} == {"set_kv_buffer"}
    assert all(isinstance(call.args[0], torch.Tensor) for call in calls)  # never a KVWriteLoc
    assert all(len(call.args) == 3 and not call.kwargs for call in calls)  # loc, k, v


def test_hpc_ops_wraps_the_loc_without_swa_and_passes_the_layer_scales():
    calls = calls_of("hpc_ops", "extend", "current", "mha", "scaled")
    loc = calls[0].args[0]
    assert not isinstance(loc, torch.Tensor) and loc.swa_loc is None
    assert len(calls[0].args) == 5  # loc, k, v, k_scale, v_scale


def test_cutedsl_mla_writes_as_the_trtllm_mla_it_inherits_from():
    for mode in ("extend", "decode"):
        mine = calls_of("cutedsl_mla", mode, "current", "mla", "plain")
        theirs = calls_of("trtllm_mla", mode, "current", "mla", "plain")
        assert [c.method for c in mine] == [c.method for c in theirs] == ["set_mla_kv_buffer"] * 2
    assert BACKENDS["cutedsl_mla"].skips == BACKENDS["trtllm_mla"].skips


def test_each_new_backend_runs_as_release_code_or_says_why_not():
    for name in ("torch_flex", "wave", "cutedsl_mla", "hpc_ops"):
        assert BACKENDS[name].real_code is not None and not BACKENDS[name].real_code_gap, name
    assert {BACKENDS[name].eras for name in ("hpc_ops", "cutedsl_mla")} == {("current",)}


@pytest.mark.sglang
def test_the_new_backends_release_classes_load_from_the_installed_release(sglang):
    for name, cls in (
        ("torch_flex", "TorchFlexAttnBackend"),
        ("wave", "WaveAttnBackend"),
        ("cutedsl_mla", "CuteDslMLABackend"),
        ("hpc_ops", "HPCOpsAttnBackend"),
    ):
        assert sglang.real_backends[name].__name__ == cls
