"""Planted Triton kernel faults (tests/fixtures/triton_*.py) are caught: a dropped partial
column block by the differential runner, int32-narrowed slot ids and an off-by-one HND page
offset by the kernel tests' own comparisons."""

from __future__ import annotations

import importlib

import pytest
import torch

from harness.plan.candidate import Candidate
from harness.run.cells import check_scenario
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from tests.conftest import scenario_named

# Compiled on a CUDA device where there is one (TRITON_INTERPRET on CPU otherwise).
pytestmark = pytest.mark.gpu

DEVICE = (
    "cpu" if builtin_module("current", "triton").MHATokenToKVPool.engine.interpreted else "cuda"
)


def _fixture(name: str):
    return importlib.import_module(f"tests.fixtures.{name}")


def test_partial_block_mask_at_head_dim_80_is_a_bytes_finding():
    scenario = scenario_named("mha", "bf16", "prefill")
    scenario.geometry.head_dim = scenario.geometry.v_head_dim = 80
    scenario.forwards[0].loc = scenario.forwards[0].loc[:6]
    scenario.geometry.layer_num = 1
    baseline = Candidate(
        "builtin", builtin_module("legacy", "reference"), "legacy", "reference", "cpu", "plain"
    )
    faulty = Candidate(
        "triton_partial_block", _fixture("triton_partial_block"), "current", "-", DEVICE, "plain"
    )
    sound = Candidate(
        "builtin", builtin_module("current", "triton"), "current", "triton", DEVICE, "plain"
    )
    bad, good = check_scenario(scenario, baseline, [faulty, sound], timeout_s=None)
    assert good.outcome == "pass"
    assert bad.outcome == Outcome.FINDING
    finding = bad.findings[0]
    assert finding.oracle == "bytes" and finding.byte_offset == 64 * 2  # column 64 of head 0, bf16


def test_int32_narrowed_slot_ids_drop_the_write_above_2_31():
    memory = torch.zeros(1, 1, 16, dtype=torch.bfloat16, device=DEVICE)
    rows = torch.ones(1, 1, 16, dtype=torch.bfloat16, device=DEVICE)
    loc = torch.tensor([2**31 + 8], device=DEVICE)
    _fixture("triton_int32_slots").ENGINE.scatter(memory.expand(2**31 + 16, 1, 16), loc, rows)
    assert not torch.equal(memory, rows)  # the sound engine writes it (test_triton_engine.py)


def test_off_by_one_hnd_page_offset_differs_from_torch():
    buffer = torch.zeros(4, 2, 8, 16, dtype=torch.bfloat16, device=DEVICE)
    slots = torch.tensor(
        [3, 9, 20], device=DEVICE
    )  # not a page's last slot: the fault stays in bounds
    rows = torch.randn(3, 2, 16).bfloat16().to(DEVICE)
    want = buffer.clone()
    want[slots // 8, :, slots % 8] = rows
    _fixture("triton_hnd_page_offset").ENGINE.scatter_hnd(buffer, slots, rows)
    assert not torch.equal(buffer, want)
