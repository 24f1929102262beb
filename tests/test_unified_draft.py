"""The fused-draft SWA pool kind (issue 27): UnifiedDraftSWAKVPool writes a draft runner's lanes
inside the target's unified full and SWA entries, behind the target's own rows, and its full
layers write at loc whatever full_loc says. The judge's views, routes and refusals are pinned
against the installed release's own class; a draft pool that routes full layers at full_loc is
caught by the default run and at --profile ci."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.kinds.landing import unified_entry_bytes, unified_swa_base
from pools.write_loc import CurrentWriteLoc
from scenarios.model import Geometry
from tests.helpers.unified_swa_writes import FULL, SWA, bf16_rows, write_three

SHAPE = dict(page_size=4, head_num=2, head_dim=32, v_head_dim=16)
GEOMETRY = Geometry(
    pool="swa_unified_draft", dtype="bf16", size=16, size_swa=8, layer_num=3, swa_layer_ids=[1],
    **SHAPE,
)  # fmt: skip
POOL = dict(
    size=16, size_swa=8, dtype=torch.bfloat16, swa_attention_layer_ids=[1],
    full_attention_layer_ids=[0, 2], device="cpu", swa_slot_base=unified_swa_base(GEOMETRY),
    host_layer_num=1, runner=1, runner_num=2, **SHAPE,
)  # fmt: skip
ROW = 2 * (32 + 16) * 2  # one layer's K and V rows, bf16


def test_an_entry_holds_the_hosts_rows_then_every_runners_lanes():
    # Full: 1 host layer + 2 runners x 2 layers; SWA: 1 + 2 x 1, each padded to 32 bytes.
    assert unified_entry_bytes(GEOMETRY, 2) == 5 * ROW
    assert unified_entry_bytes(GEOMETRY, 1) == 3 * ROW
    pool = judge_module("current").UnifiedDraftSWAKVPool(**POOL)
    # This runner's first full lane is past the host's row and runner 0's two lanes.
    assert pool.get_key_buffer(0).storage_offset() * 2 == 3 * ROW
    assert pool.get_key_buffer(1).storage_offset() * 2 == 2 * ROW
    assert pool.get_key_buffer(0).stride()[0] * 2 == 5 * ROW


def test_the_judge_writes_full_layers_at_loc_and_refuses_as_the_release_does():
    pool = judge_module("current").UnifiedDraftSWAKVPool(**POOL)
    k, v = bf16_rows(0, 1, 2, 32), bf16_rows(1, 1, 2, 16)
    with pytest.raises(ValueError, match="not marked physical"):
        pool.set_kv_buffer(FULL, CurrentWriteLoc(torch.tensor([5])), k, v)
    with pytest.raises(AssertionError, match="swa_loc"):
        pool.set_kv_buffer(SWA, CurrentWriteLoc(torch.tensor([5]), physical=True), k, v)
    assert not pool.full_kv_pool.raw.any()
    stale = CurrentWriteLoc(torch.tensor([5]), None, torch.tensor([6]), physical=True)
    pool.set_kv_buffer(FULL, stale, k, v)
    keys = pool.get_key_buffer(FULL.layer_id)
    assert torch.equal(keys[5], k[0]) and not keys[6].any()


@pytest.mark.sglang
def test_the_installed_release_lays_out_routes_and_refuses_as_the_judge_says():
    from tests.helpers.installed_release import release_offering

    sglang = release_offering("UnifiedDraftSWAKVPool")
    release, judge = (
        sglang.UnifiedDraftSWAKVPool(**POOL),
        judge_module("current").UnifiedDraftSWAKVPool(**POOL),
    )
    for layer in (0, 1, 2):  # the same lanes of one buffer: strides and offsets
        for read in ("get_key_buffer", "get_value_buffer"):
            mine, theirs = getattr(judge, read)(layer), getattr(release, read)(layer)
            assert mine.shape == theirs.shape, (layer, read)
            assert mine.stride() == theirs.stride(), (layer, read)
            assert mine.storage_offset() == theirs.storage_offset(), (layer, read)
    k, v = bf16_rows(0, 1, 2, 32), bf16_rows(1, 1, 2, 16)
    with pytest.raises(ValueError, match="not marked physical"):
        release.set_kv_buffer(FULL, sglang.KVWriteLoc(torch.tensor([5])), k, v)
    with pytest.raises(AssertionError, match="swa_loc"):
        release.set_kv_buffer(SWA, sglang.KVWriteLoc(torch.tensor([5]), physical=True), k, v)
    write_three(release, sglang.KVWriteLoc, GEOMETRY)
    write_three(judge, CurrentWriteLoc, GEOMETRY)
    raw = release.unified_buffer._raw
    assert judge.full_kv_pool.raw.any() and torch.equal(raw, judge.full_kv_pool.raw)


@pytest.mark.parametrize("profile", [(), ("--profile", "ci")])
def test_a_draft_pool_that_writes_full_layers_at_full_loc_is_caught(profile, tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/unified_draft_at_full_loc.py", "--pool",
         "swa_unified_draft", "--dtype", "bf16", "--backend", "plain", *profile,
         "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert any(oracle in out for oracle in ("[bytes]", "[untouched]", "[value]")), out[-2000:]
