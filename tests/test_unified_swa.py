"""The unified SWA pool kind (issue 27): UnifiedSWAKVPool's full and SWA sub-pools share one byte
buffer, each sub-pool's views from byte 0, so SWA slots sit above every full byte. The judge's
views, routes (swa_loc, full_loc or loc, the physical mark) and refusals are pinned against the
installed release's own class; a pool that writes a SWA layer at its full id is caught by the
default run and at --profile ci."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.kinds.landing import unified_entry_bytes, unified_swa_base, unified_swa_slot
from pools.write_loc import CurrentWriteLoc
from scenarios.model import Geometry
from tests.helpers.unified_swa_writes import FULL, SWA, bf16_rows, write_three

SHAPE = dict(page_size=4, head_num=2, head_dim=32, v_head_dim=16)
GEOMETRY = Geometry(
    pool="swa_unified", dtype="bf16", size=16, size_swa=8, layer_num=3, swa_layer_ids=[1],
    **SHAPE,
)  # fmt: skip
POOL = dict(
    size=16, size_swa=8, dtype=torch.bfloat16, swa_attention_layer_ids=[1],
    full_attention_layer_ids=[0, 2], device="cpu", swa_slot_base=unified_swa_base(GEOMETRY),
    **SHAPE,
)  # fmt: skip


def test_the_swa_base_clears_every_full_byte_by_whole_pages():
    full = unified_entry_bytes(GEOMETRY, 2) * (16 + 4)
    base = unified_swa_base(GEOMETRY)
    assert base % 4 == 0 and base * unified_entry_bytes(GEOMETRY, 1) >= full
    assert unified_swa_slot(GEOMETRY, torch.tensor([0, 4, 11])).tolist() == [0, 4 + base, 11 + base]


def test_the_judge_refuses_an_unmarked_loc_and_a_swa_layer_without_swa_loc():
    pool = judge_module("current").UnifiedSWAKVPool(**POOL)
    k, v = bf16_rows(0, 1, 2, 32), bf16_rows(1, 1, 2, 16)
    with pytest.raises(ValueError, match="not marked physical"):
        pool.set_kv_buffer(FULL, CurrentWriteLoc(torch.tensor([5])), k, v)
    with pytest.raises(AssertionError, match="swa_loc"):
        pool.set_kv_buffer(SWA, CurrentWriteLoc(torch.tensor([5]), physical=True), k, v)
    assert not pool.full_kv_pool.raw.any()


@pytest.mark.sglang
def test_the_installed_release_shares_routes_and_refuses_as_the_judge_says():
    from tests.helpers.installed_release import release_offering

    sglang = release_offering("UnifiedSWAKVPool")
    release, judge = (
        sglang.UnifiedSWAKVPool(**POOL),
        judge_module("current").UnifiedSWAKVPool(**POOL),
    )
    for layer in (0, 1, 2):  # the same views of one buffer: strides and offsets
        for read in ("get_key_buffer", "get_value_buffer"):
            mine, theirs = getattr(judge, read)(layer), getattr(release, read)(layer)
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
def test_a_pool_that_writes_swa_layers_at_the_full_id_is_caught(profile, tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/unified_swa_at_full_slot.py", "--pool", "swa_unified",
         "--dtype", "bf16", "--backend", "plain", *profile, "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert any(oracle in out for oracle in ("[bytes]", "[untouched]", "[value]")), out[-2000:]
