"""HND page-major, NPU and aiter 5-D pools: where each slot's bytes land, and planted faults."""

from __future__ import annotations

import pytest
import torch

from harness.compare.comparison import judge
from harness.compare.expectations import expected_writes
from harness.plan.candidate import Candidate
from harness.run.execute import execute
from pools.builtin.engines import make_engine
from pools.builtin.layouts.paged import AITER_K, AITER_V, HND_LAYOUT
from pools.builtin.sut import builtin_module
from pools.kinds.slot_rows import aiter_key_rows, aiter_value_rows, page_major_rows
from scenarios.defaults import geometry
from scenarios.model import Forward, Scenario
from tests.conftest import scenario_named
from tests.fixtures.layout_faults import planted


def _layer():
    return type("Layer", (), {"layer_id": 0})()


@pytest.mark.parametrize("engine", ["reference", "torch"])
def test_hnd_write_lands_at_page_head_offset(engine):
    pool = builtin_module("current", engine).MHATokenToKVPoolHND(
        size=16,
        page_size=4,
        dtype=torch.bfloat16,
        head_num=4,
        head_dim=8,
        layer_num=1,
        device="cpu",
    )
    k = torch.randn(2, 4, 8).to(torch.bfloat16)
    pool.set_kv_buffer(_layer(), torch.tensor([6, 9]), k, k.clone())
    assert torch.equal(pool.k_buffer[0][1, :, 2], k[0]) and torch.equal(
        pool.k_buffer[0][2, :, 1], k[1]
    )


@pytest.mark.parametrize(
    "layout,slot_rows,shape",
    [
        (HND_LAYOUT, page_major_rows, (6, 2, 4, 16)),
        (AITER_K, aiter_key_rows, (3, 2, 2, 8, 8)),
        (AITER_V, aiter_value_rows, (3, 2, 1, 16, 8)),
    ],
)
def test_engines_agree_and_the_kinds_slot_rows_find_each_row(layout, slot_rows, shape):
    """The builtin's placement and the kind's reading (pools/kinds/slot_rows.py, what snapshots
    compare) are written apart; each slot's row is where the other looks for it."""
    rows = torch.randn(5, 2, 16).to(torch.bfloat16)
    loc = torch.tensor([1, 13, 7, 13, 23])  # a duplicate: the last writer wins
    buffers = {}
    for engine in ("reference", "torch"):
        buffers[engine] = torch.zeros(shape, dtype=torch.bfloat16)
        make_engine(engine).scatter_layout(buffers[engine], loc, rows, layout)
    assert torch.equal(buffers["reference"], buffers["torch"])
    view = slot_rows(buffers["torch"])
    assert torch.equal(view[[1, 7, 13, 23]], rows[[0, 2, 3, 4]])
    with pytest.raises(IndexError):
        make_engine("torch").scatter_layout(buffers["torch"], torch.tensor([24]), rows[:1], layout)


def test_aiter_5d_enforces_divisibility():
    cls = builtin_module("current", "torch").MHATokenToKVPoolAiter5D
    with pytest.raises(ValueError, match="divisible by X"):
        cls(
            size=16,
            page_size=4,
            dtype=torch.bfloat16,
            head_num=2,
            head_dim=16,
            layer_num=1,
            device="cpu",
        )


def _caught(module, scenario, backend):
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
    candidate = execute(
        Candidate("builtin", module, "current", "torch", "cpu", backend, "extend"), scenario
    )
    assert (
        judge(
            scenario,
            baseline,
            execute(
                Candidate(
                    "builtin",
                    builtin_module("current", "torch"),
                    "current",
                    "torch",
                    "cpu",
                    backend,
                    "extend",
                ),
                scenario,
            ),
            expected_writes(scenario),
        )
        == []
    )
    return judge(scenario, baseline, candidate, expected_writes(scenario))


def test_transposed_hnd_index_is_caught_when_page_size_equals_head_num():
    g = geometry("mha_hnd", "bf16", page_size=4, size=32)
    assert g.page_size == g.head_num
    scenario = Scenario(g, [Forward([5, 6, 11, 30])], seed=4, name="hnd-square")
    findings = _caught(planted("hnd-transposed"), scenario, "plain")
    assert findings and findings[0].oracle == "bytes" and findings[0].buffer == "L0.k"


def test_swapped_nope_and_rope_on_npu_mla_is_caught():
    scenario = scenario_named("npu_mla", "bf16", "small-scaled")
    findings = _caught(planted("npu-mla-nope-rope-swapped"), scenario, "ascend")
    assert findings and findings[0].oracle == "exception"


def test_npu_mha_is_one_all_layer_tensor():
    pool = builtin_module("current", "torch").NPUMHATokenToKVPool(
        size=16,
        page_size=4,
        dtype=torch.bfloat16,
        head_num=2,
        head_dim=8,
        layer_num=3,
        device="cpu",
    )
    assert tuple(pool.k_buffer.shape) == (3, 5, 4, 2, 8)
