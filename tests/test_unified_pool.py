"""The unified MHA pool kind (issue 27): strided per-layer views into one byte buffer, and doors
that refuse a loc not marked physical. The judge's layout and refusal are pinned against the
installed release's own UnifiedMHATokenToKVPool; a pool that accepts an unmarked loc and one
that assumes dense rows are caught by the default run and at --profile ci."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc
from tests.helpers.installed_release import release_offering

GEOMETRY = dict(
    size=16, page_size=1, dtype=torch.bfloat16, head_num=2, head_dim=32, layer_num=3,
    device="cpu", v_head_dim=16,
)  # fmt: skip
LAYER = type("Layer", (), {"layer_id": 1, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _write(pool, write_loc) -> None:
    loc = torch.tensor([3, 7, 16])
    pool.set_kv_buffer(LAYER, write_loc(loc, physical=True), _rows(0, 3, 2, 32), _rows(1, 3, 2, 16))


def test_the_judges_views_are_strided_and_bytes_land_in_the_slots_entry():
    pool = judge_module("current").UnifiedMHATokenToKVPool(**GEOMETRY)
    k = pool.k_buffer[1]
    assert k.stride(0) == pool.entry_bytes // 2 > 2 * 32  # slot stride past heads x dim
    _write(pool, CurrentWriteLoc)
    entry, layer_bytes = pool.entry_bytes, 2 * 32 * 2 + 2 * 16 * 2
    row = pool.raw[7 * entry + layer_bytes : 7 * entry + layer_bytes + 128]
    assert torch.equal(row.view(torch.bfloat16).view(2, 32), _rows(0, 3, 2, 32)[1])
    written = torch.zeros(pool.raw.shape[0], dtype=torch.bool)
    for slot in (3, 7, 16):
        written[slot * entry + layer_bytes : slot * entry + 2 * layer_bytes] = True
    assert not pool.raw[~written].any()  # no byte outside layer 1's rows of the three slots


def test_the_judge_refuses_a_loc_not_marked_physical():
    pool = judge_module("current").UnifiedMHATokenToKVPool(**GEOMETRY)
    for loc_info in (torch.tensor([3]), CurrentWriteLoc(torch.tensor([3]))):
        with pytest.raises(ValueError, match="not marked physical"):
            pool.set_kv_buffer(LAYER, loc_info, _rows(0, 1, 2, 32), _rows(1, 1, 2, 16))
    assert not pool.raw.any()


@pytest.mark.sglang
def test_the_installed_release_lays_out_and_refuses_as_the_judge_says():
    sglang = release_offering("UnifiedMHATokenToKVPool")
    release = sglang.UnifiedMHATokenToKVPool(**GEOMETRY)
    judge = judge_module("current").UnifiedMHATokenToKVPool(**GEOMETRY)
    assert release.k_buffer[1].stride() == judge.k_buffer[1].stride()
    assert release.v_buffer[2].storage_offset() == judge.v_buffer[2].storage_offset()
    with pytest.raises(ValueError, match="not marked physical"):
        release.set_kv_buffer(LAYER, sglang.KVWriteLoc(torch.tensor([3])), _rows(0, 1, 2, 32),
                              _rows(1, 1, 2, 16))  # fmt: skip
    _write(release, sglang.KVWriteLoc)
    _write(judge, CurrentWriteLoc)
    raw = release._unified_buffer._raw
    assert torch.equal(raw[: judge.raw.shape[0]], judge.raw)


@pytest.mark.parametrize("fixture", ["unified_accepts_unmarked", "unified_dense_rows"])
@pytest.mark.parametrize("profile", [(), ("--profile", "ci")])
def test_a_faulty_unified_pool_is_caught(fixture, profile, tmp_path, capsys):
    status = main(
        ["run", "--sut", f"tests/fixtures/{fixture}.py", "--pool", "unified_mha", "--dtype",
         "bf16", "--backend", "plain", *profile, "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    if fixture == "unified_accepts_unmarked":
        caught_by = ("[exception] did not raise where the baseline did: ValueError",)
    else:
        caught_by = ("[bytes]", "[untouched]")
    assert any(oracle in out for oracle in caught_by), out[-2000:]


MLA_GEOMETRY = dict(
    size=16, page_size=1, dtype=torch.bfloat16, kv_lora_rank=48, qk_rope_head_dim=16,
    layer_num=3, device="cpu",
)  # fmt: skip


@pytest.mark.sglang
def test_the_installed_unified_mla_pool_lays_out_and_refuses_as_the_judge_says():
    sglang = release_offering("UnifiedMLATokenToKVPool")
    release = sglang.UnifiedMLATokenToKVPool(**MLA_GEOMETRY)
    judge = judge_module("current").UnifiedMLATokenToKVPool(**MLA_GEOMETRY)
    assert release.kv_buffer[2].stride() == judge.kv_buffer[2].stride()
    assert release.kv_buffer[2].storage_offset() == judge.kv_buffer[2].storage_offset()
    assert judge.kv_buffer[0].stride(0) > 48 + 16  # slot stride past one latent row
    nope, rope = _rows(0, 2, 1, 48), _rows(1, 2, 1, 16)
    for pool, write_loc in ((release, sglang.KVWriteLoc), (judge, CurrentWriteLoc)):
        with pytest.raises(ValueError, match="not marked physical"):
            pool.set_mla_kv_buffer(LAYER, write_loc(torch.tensor([3, 5])), nope, rope)
        pool.set_mla_kv_buffer(LAYER, write_loc(torch.tensor([3, 5]), physical=True), nope, rope)
    raw = release._unified_buffer._raw
    assert judge.raw.any() and torch.equal(raw[: judge.raw.shape[0]], judge.raw)
