"""The layer-split DSA pool kind (issue 27): LayerSplitDSATokenToKVPool keeps a contiguous share of
the layers on each rank of an attention context-parallel group; a peer's layer has no rows and
every door of it writes nothing. The judge's shares, bytes and indexer keys are pinned against
the installed release's own class (built by the loader with a stood-in group), and a pool that
keeps the wrong share is caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.judge.layer_split import owned_layers
from pools.kinds.landing import owned_layers as expected_owned
from pools.write_loc import CurrentWriteLoc
from scenarios.defaults import geometry
from tests.helpers.installed_release import release_offering

LOC = [0, 3, 70, 129, 200]


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _drive(module, write_loc, rank: int) -> dict:
    pool = module.LayerSplitDSATokenToKVPool(
        size=256, page_size=64, dtype=torch.bfloat16, kv_lora_rank=32, qk_rope_head_dim=16,
        layer_num=3, device="cpu", enable_memory_saver=False, index_head_dim=128,
        kv_cache_dim=48, layer_shard_rank=rank, layer_shard_size=2,
    )  # fmt: skip
    n, loc = len(LOC), torch.tensor(LOC)
    for layer_id in range(3):
        keys = _rows(layer_id, n, 128).float().to(torch.float8_e4m3fn)
        pool.set_index_k_scale_buffer(layer_id, loc, keys, torch.rand(n, 1))
        pool.set_mla_kv_buffer(_layer(layer_id), loc, _rows(9, n, 1, 32), _rows(8, n, 1, 16))
    pool.set_kv_buffer(_layer(0), write_loc(loc, physical=True), _rows(7, n, 1, 48), None)
    with pytest.raises(TypeError):  # neither K/V door takes an override
        pool.set_kv_buffer(_layer(0), loc, _rows(7, n, 1, 48), None, layer_id_override=0)
    seen = {f"kv{i}": pool.kv_buffer[i].view(torch.uint8).clone() for i in range(3)}
    seen.update({f"index{i}": pool.index_k_with_scale_buffer[i].clone() for i in range(3)})
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("rank", [0, 1])
def test_the_judge_keeps_the_rank_s_layers_as_the_installed_release(rank):
    sglang = release_offering("LayerSplitDSATokenToKVPool")
    torch.manual_seed(0)
    release = _drive(sglang, sglang.KVWriteLoc, rank)
    torch.manual_seed(0)
    judge = _drive(judge_module("current"), CurrentWriteLoc, rank)
    for name in release:
        assert torch.equal(release[name], judge[name]), name
    owned = [layer for layer in range(3) if release[f"kv{layer}"].shape[0]]
    assert owned == ([0, 1] if rank == 0 else [2])


def test_the_scenarios_and_the_judge_split_layers_alike():
    for layers in range(1, 9):
        g = geometry("layer_split_dsa", "bf16")
        g.layer_num = layers
        assert list(expected_owned(g)) == list(owned_layers(0, 2, layers))


def test_a_pool_keeping_the_wrong_share_of_layers_is_caught(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/layer_split_counts_from_the_end.py", "--pool",
         "layer_split_dsa", "--dtype", "bf16", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert any(oracle in out for oracle in ("[shape]", "[bytes]", "[value]")), out[-2000:]
