"""FP4 pools: SGLang's e2m1 block quantiser (reference, torch), its pools and planted faults."""

from __future__ import annotations

import pytest
import torch

from harness.compare.comparison import judge
from harness.compare.expectations import expected_writes
from harness.plan.candidate import Candidate
from harness.run.execute import execute
from pools.builtin.fp4 import quantiser, torch_quant
from pools.builtin.sut import builtin_module
from tests.conftest import scenario_named
from tests.fixtures.layout_faults import planted


def _edge_values() -> torch.Tensor:
    x = torch.randn(6, 2, 32, generator=torch.Generator().manual_seed(1)) * 8
    x[0, 0, :16] = 0.0  # all-zero block: the 1e-10 floor
    x[0, 1, :16] = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0] * 2)  # ties, scale 1
    x[1, 0, :16] = -0.0
    x[1, 1, :16] = 12.0 * (1 + 2.0**-20)  # just above a power of two times 6
    x[2, :, :] *= 1e-30
    return x


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_torch_quantiser_is_byte_identical_to_the_reference(dtype):
    x = _edge_values().to(dtype)
    for want, got in zip(quantiser.quantize(x), torch_quant.quantize(x)):
        assert torch.equal(want, got)


def test_sglang_semantics_nibble_order_ties_and_scale_bytes():
    x = torch.zeros(1, 1, 16)
    x[0, 0, :4] = torch.tensor([0.5, 1.0, -6.0, 0.25])  # block max 6: scale 2**0, byte 127
    packed, scales = quantiser.quantize(x)
    assert scales.tolist() == [[127]]
    # element 0 (code 1) in the low nibble, element 1 (code 2) in the high one; -6 is 0xF and
    # the tie 0.25 rounds away from zero to 0.5 (code 1).
    assert packed[0, 0, :2].tolist() == [0x21, 0x1F]
    assert quantiser.quantize(torch.zeros(1, 1, 16))[1].tolist() == [[127 - 33]]


def test_dequantised_values_are_within_the_bound():
    x = _edge_values()
    got = quantiser.dequantize(*quantiser.quantize(x))
    assert bool(((got.reshape(6, -1) - x.reshape(6, -1)).abs() <= quantiser.error_bound(x)).all())


def test_shapes_that_do_not_fill_blocks_are_rejected():
    with pytest.raises(ValueError, match="multiple of 16"):
        quantiser.quantize(torch.zeros(1, 1, 8))


def _run(module, scenario, backend="plain"):
    return execute(
        Candidate("builtin", module, "current", "torch", "cpu", backend, "extend"), scenario
    )


@pytest.fixture(scope="module")
def fp4_cases():
    cases = {}
    for pool, backend in (("mha_fp4", "plain"), ("mla_fp4", "plain_mla")):
        scenario = scenario_named(pool, "bf16", "small-scaled")
        baseline = execute(
            Candidate(
                "builtin",
                builtin_module("current", "reference"),
                "current",
                "reference",
                "cpu",
                backend,
                "extend",
            ),
            scenario,
        )
        assert baseline.error is None
        cases[pool] = scenario, baseline, backend
    return cases


@pytest.mark.parametrize("pool", ["mha_fp4", "mla_fp4"])
def test_builtin_fp4_pools_agree_and_write_scales(fp4_cases, pool):
    scenario, baseline, backend = fp4_cases[pool]
    candidate = _run(builtin_module("current", "torch"), scenario, backend)
    assert judge(scenario, baseline, candidate, expected_writes(scenario)) == []
    scale_buffers = [name for name in candidate.buffers if name.endswith("_scale")]
    assert scale_buffers and all(
        bool((candidate.buffers[n][1:] != 0xA5).any()) for n in scale_buffers
    )


@pytest.mark.parametrize("fault", ["fp4-nibble-swap", "fp4-wrong-block-scale"])
@pytest.mark.parametrize("pool", ["mha_fp4", "mla_fp4"])
def test_planted_fp4_faults_are_caught_bytewise_and_by_the_bound(fp4_cases, pool, fault):
    scenario, baseline, backend = fp4_cases[pool]
    faulty = _run(planted(fault), scenario, backend)
    oracles = {f.oracle for f in judge(scenario, baseline, faulty, expected_writes(scenario))}
    assert {"bytes", "fp4_bound"} <= oracles
    # Wrong in the baseline too: only the bound oracle, which never reads the baseline, sees it.
    both = {f.oracle for f in judge(scenario, faulty, faulty, expected_writes(scenario))}
    assert both == {"fp4_bound"}


def test_mla_latent_and_split_writes_store_the_same_bytes(fp4_cases):
    scenario, _, _ = fp4_cases["mla_fp4"]
    module = builtin_module("current", "torch")
    assert (
        _run(module, scenario, "plain").buffers.keys()
        == _run(module, scenario, "plain_mla").buffers.keys()
    )
    latent, split = _run(module, scenario, "plain"), _run(module, scenario, "plain_mla")
    assert all(torch.equal(latent.buffers[n], split.buffers[n]) for n in latent.buffers)
