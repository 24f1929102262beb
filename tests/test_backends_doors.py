"""Which pool door each call site uses, with which loc argument and which scales, per era;
and PR #27695's review bug caught through the triton and aiter doors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from backends.registry import BACKENDS
from harness.plan.candidate import Candidate
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.deterministic import run
from harness.run.execute import execute, write_request
from harness.run.pool_buffers import buffer_bytes
from harness.run.pool_factory import build_pool
from harness.sut.load.loader import load_foreign
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from scenarios.materialize import ForwardStaging
from tests.conftest import FIXTURES
from tests.fixtures.backend_probes import ENCODER_LOC, LOC, SWA, probe


def spy_module(era: str, base=None) -> SimpleNamespace:
    """The builtin era module with every top-level pool call recorded (sub-pool calls, which
    carry layer=None, are not)."""
    base = base or builtin_module(era, "torch")
    calls: list = []

    def recorded(cls: type, method: str):
        original = getattr(cls, method)

        def spy(self, layer, *args, **kwargs):
            if layer is not None:
                calls.append(
                    SimpleNamespace(method=method, layer=layer.layer_id, args=args, kwargs=kwargs)
                )
            return original(self, layer, *args, **kwargs)

        return spy

    names = dict(vars(base))
    for name, methods in (
        ("MHATokenToKVPool", ("set_kv_buffer",)),
        ("MLATokenToKVPool", ("set_kv_buffer", "set_mla_kv_buffer")),
        ("SWAKVPool", ("set_kv_buffer", "set_mla_kv_buffer")),
    ):
        cls = getattr(base, name)
        names[name] = type(name, (cls,), {m: recorded(cls, m) for m in methods})
    return SimpleNamespace(**names, calls=calls)


def calls_of(
    backend: str, mode: str, era: str, pool: str, kind: str, dtype: str = "bf16", base=None
):
    module = spy_module(era, base)
    scenario = probe(pool, kind, dtype)
    result = execute(Candidate("builtin", module, era, "torch", "cpu", backend, mode), scenario)
    assert result.error is None, result.error
    return module.calls


@pytest.mark.parametrize(
    "backend, door, width",
    [
        ("fa3", "set_mla_kv_buffer", 16),
        ("xpu", "set_mla_kv_buffer", 16),
        ("musa", "set_mla_kv_buffer", 16),
        ("trtllm_mla", "set_mla_kv_buffer", 16),
        ("flashinfer_mla", "set_mla_kv_buffer", 16),
        ("ascend", "set_mla_kv_buffer", 16),
        ("triton", "set_kv_buffer", 24),
        ("aiter", "set_kv_buffer", 24),
        ("torch_native", "set_kv_buffer", 24),
        ("flashmla", "set_kv_buffer", 24),
    ],
)
def test_mla_door_and_what_it_is_handed(backend, door, width):
    calls = calls_of(backend, "extend", "bundled", "mla", "plain")
    assert {call.method for call in calls} == {door}
    assert calls[0].args[1].shape[-1] == width  # nope alone, or the latent row nope ++ rope


def test_ascend_mla_means_nope_rope_on_an_npu_pool():
    npu = load_foreign(str(FIXTURES / "npu_mla_pool.py")).module
    calls = calls_of("ascend", "extend", "current", "mla", "plain", base=npu)
    assert calls[0].method == "set_kv_buffer"  # (the fixture then stores via its own door)
    nope, rope = calls[0].args[1], calls[0].args[2]
    assert (nope.shape[-1], rope.shape[-1]) == (16, 8)


@pytest.mark.parametrize(
    "backend, mode, era, wrapped",
    [
        ("triton", "extend", "bundled", True),  # every extend branch, MLA included
        ("triton", "decode", "bundled", False),  # MLA decode: bare out_cache_loc until 0.5.23
        ("aiter", "decode", "bundled", True),  # MLA decode's last branch
        ("aiter", "extend", "bundled", False),
        ("xpu", "extend", "current", False),
        ("fa3", "extend", "current", True),
    ],
)
def test_mla_loc_argument_per_era(backend, mode, era, wrapped):
    calls = calls_of(backend, mode, era, "mla", "plain")
    assert all(isinstance(call.args[0], torch.Tensor) != wrapped for call in calls)


@pytest.mark.parametrize(
    "backend, physical",
    [
        ("trtllm_mha", True),
        ("fa3", True),
        ("musa", False),
        ("torch_native", False),
        ("intel_amx", False),
    ],
)
def test_current_kvwriteloc_constructor(backend, physical):
    calls = calls_of(backend, "extend", "current", "mha", "plain")
    assert {call.args[0].physical for call in calls} == {physical}


@pytest.mark.parametrize(
    "backend, paired",
    [
        ("fa3", True),
        ("flashinfer", True),
        ("xpu", True),
        ("torch_native", True),
        ("intel_amx", False),
        ("ascend", False),
    ],
)
def test_cross_attention_writes_the_encoder_loc_with_the_decoders_swa_loc(backend, paired):
    calls = calls_of(backend, "extend", "kwarg", "swa_mha", "cross")
    cross, swa_layer = calls
    assert (cross.layer, swa_layer.layer) == (0, 1)
    assert cross.args[0].tolist() == ENCODER_LOC
    assert ("swa_loc" in cross.kwargs) == paired
    assert swa_layer.kwargs["swa_loc"].tolist() == [SWA[slot] for slot in LOC]


def test_scales_each_site_passes():
    aiter_old = calls_of("aiter", "decode", "bundled", "mha", "float", dtype="fp8_e4m3")
    aiter_new = calls_of("aiter", "decode", "current", "mha", "float", dtype="fp8_e4m3")
    assert len(aiter_old[0].args) == 3 and aiter_new[0].args[3] == 0.5  # no scales, then descales
    amx = calls_of("intel_amx", "extend", "current", "mha", "float", dtype="fp8_e4m3")
    assert amx[0].kwargs["k_scale"] == 0.5 and isinstance(amx[0].kwargs["k_scale"], float)
    assert len(calls_of("torch_native", "extend", "current", "mha", "scaled")[0].args) == 3
    scales = calls_of("fa3", "extend", "legacy", "mha", "scaled")[0].args[3:]
    assert [type(scale) for scale in scales] == [torch.Tensor, torch.nn.Parameter]


def request(backend: str, mode: str, era: str, pool: str):
    scenario = probe(pool)
    module = spy_module(era)
    built = build_pool(module, scenario, "cpu")
    req = write_request(
        module,
        "cpu",
        BACKENDS[backend],
        built,
        scenario,
        0,
        0,
        ForwardStaging(scenario, "cpu", built).begin(0),
        (None, None),
    )
    return req, module.calls


def test_save_kv_cache_false_writes_nothing_except_the_intel_amx_decode_kernel():
    for backend in sorted(BACKENDS):
        for mode in BACKENDS[backend].modes:
            pool = BACKENDS[backend].pool_kinds[0]
            req, calls = request(backend, mode, "kwarg", pool)
            req.save_kv_cache = False
            scenario = probe(pool)  # every buffer of every layer, as the oracles read them
            before = {name: rows.clone() for name, rows in buffer_bytes(req.pool, scenario).items()}
            BACKENDS[backend].write(req, "kwarg", mode)
            after = buffer_bytes(req.pool, scenario)
            wrote = any(not torch.equal(before[name], after[name]) for name in before)
            assert not calls
            assert wrote == ((backend, mode) == ("intel_amx", "decode")), (backend, mode)


def test_flashinfer_current_drops_scales_for_global_scale_quant():
    req, calls = request("flashinfer", "extend", "current", "mha")
    req.layer.k_scale = req.layer.v_scale = 0.5
    req.metadata.kv_quant_needs_global_scale = True
    BACKENDS["flashinfer"].write(req, "current", "extend")
    assert calls[0].args[3:] == (None, None)


def review_bug_findings(fixture: str, backends: list[str]):
    options = RunOptions(
        suts=[str(FIXTURES / f"{fixture}.py")], backends=backends, scenarios=[probe("mla", "float")]
    )
    results = []
    run(options, resolve_suts(options), results.append)
    return {(r.candidate.backend, r.candidate.mode): r for r in results if r.candidate}


def test_mla_pool_that_does_not_unwrap_is_caught_through_triton_and_aiter():
    results = review_bug_findings("mla_no_unwrap", ["triton", "aiter", "fa3"])
    for cell in (("triton", "extend"), ("aiter", "decode")):
        finding = results[cell].findings[0]
        assert results[cell].outcome == Outcome.FINDING and finding.oracle == "exception"
        assert finding.written_by == "forward 0, layer 0"
    # fa3 writes MLA through set_mla_kv_buffer, which this pool unwraps: the finding is localised.
    assert results[("fa3", "extend")].outcome == "pass"


def test_set_mla_kv_buffer_that_does_not_unwrap_is_caught_through_fa3():
    results = review_bug_findings("mla_nope_rope_no_unwrap", ["fa3", "triton"])
    assert results[("fa3", "extend")].findings[0].oracle == "exception"
    assert results[("triton", "extend")].outcome == "pass"
