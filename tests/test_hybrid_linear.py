"""HybridLinearKVPool (issue 27): full-attention layers in one dense pool, linear-attention layers
with no KV. set_kv_buffer writes at full_loc where one is given, set_mla_kv_buffer at loc; a
linear layer is refused; with use_dsa the full layers are a DSATokenToKVPool's, indexer keys
included. Pinned against the installed release's own pool, and a pool that indexes its dense pool
by the global layer id is caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc
from tests.helpers.installed_release import release_offering

FULL_IDS = [1, 3]


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _pools(write_loc, module, use_mla: bool):
    shape = (
        dict(use_mla=True, kv_lora_rank=16, qk_rope_head_dim=16, head_num=1, head_dim=32)
        if use_mla
        else dict(head_num=2, head_dim=16)
    )
    return module.HybridLinearKVPool(
        size=16, dtype=torch.bfloat16, page_size=1, full_attention_layer_ids=FULL_IDS,
        device="cpu", mamba_pool=None, **shape,
    )  # fmt: skip


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _routes(module, write_loc, use_mla: bool) -> dict[str, list[int]]:
    """Which slots of dense layer 1 (global layer 3) each door wrote, and a linear layer's error."""
    pool = _pools(write_loc, module, use_mla)
    loc, full_loc = torch.tensor([2, 5]), torch.tensor([9, 11])
    if use_mla:
        k, v = _rows(0, 2, 1, 32), _rows(0, 2, 1, 16)
    else:
        k, v = _rows(0, 2, 2, 16), _rows(1, 2, 2, 16)
    pool.set_kv_buffer(_layer(3), write_loc(loc, full_loc=full_loc, physical=True), k, v)
    written = {"set_kv_buffer": pool.get_key_buffer(3).flatten(1).any(1).nonzero().flatten()}
    if use_mla:
        fresh = _pools(write_loc, module, use_mla)
        nope, rope = _rows(2, 2, 1, 16), _rows(3, 2, 1, 16)
        fresh.set_mla_kv_buffer(_layer(3), write_loc(loc, full_loc=full_loc), nope, rope)
        written["set_mla_kv_buffer"] = fresh.get_key_buffer(3).flatten(1).any(1).nonzero().flatten()
    with pytest.raises(ValueError, match="not in full attention layers"):
        pool.set_kv_buffer(_layer(2), write_loc(loc), k, v)
    assert not pool.get_key_buffer(1).any()  # the other full layer was never written
    return {door: slots.tolist() for door, slots in written.items()}


@pytest.mark.parametrize("use_mla", [False, True])
def test_the_judge_routes_full_loc_and_dense_layer_ids(use_mla):
    routes = _routes(judge_module("current"), CurrentWriteLoc, use_mla)
    assert routes["set_kv_buffer"] == [9, 11]
    if use_mla:
        assert routes["set_mla_kv_buffer"] == [2, 5]


@pytest.mark.sglang
@pytest.mark.parametrize("use_mla", [False, True])
def test_the_installed_release_routes_as_the_judge_says(use_mla):
    sglang = release_offering("HybridLinearKVPool")
    release = _routes(sglang, sglang.KVWriteLoc, use_mla)
    assert release == _routes(judge_module("current"), CurrentWriteLoc, use_mla)


def test_a_pool_indexing_by_the_global_layer_id_is_caught(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/hybrid_linear_global_ids.py", "--pool",
         "hybrid_linear_mha", "--dtype", "bf16", "--backend", "plain", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "FINDING " in out and "hybrid_linear_mha" in out


def _dsa_bytes(module) -> dict[str, torch.Tensor]:
    """A DSA hybrid's dense layers after the dsa call site's two stores on global layer 3."""
    pool = module.HybridLinearKVPool(
        size=128, dtype=torch.bfloat16, page_size=64, full_attention_layer_ids=FULL_IDS,
        device="cpu", mamba_pool=None, use_mla=True, kv_lora_rank=32, qk_rope_head_dim=16,
        head_num=1, head_dim=48, use_dsa=True, index_head_dim=128, kv_cache_dim=48,
    )  # fmt: skip
    loc = torch.tensor([0, 3, 70, 129])
    keys = _rows(4, 4, 128).float().to(torch.float8_e4m3fn)
    scales = torch.arange(1, 5, dtype=torch.float32).reshape(4, 1) / 8
    pool.set_index_k_scale_buffer(layer_id=3, loc=loc, index_k=keys, index_k_scale=scales)
    pool.set_mla_kv_buffer(_layer(3), loc, _rows(5, 4, 1, 32), _rows(6, 4, 1, 16))
    with pytest.raises(ValueError, match="not in full attention layers"):
        pool.set_index_k_scale_buffer(layer_id=2, loc=loc, index_k=keys, index_k_scale=scales)
    return {
        f"{part}{layer}": read(layer).view(torch.uint8).clone()
        for layer in FULL_IDS
        for part, read in (
            ("kv", pool.get_key_buffer),
            ("index", pool.get_index_k_with_scale_buffer),
        )
    }


@pytest.mark.sglang
def test_the_installed_release_keeps_a_dsa_hybrid_s_rows_and_keys_as_the_judge_says():
    sglang = release_offering("HybridLinearKVPool")
    release, judge = _dsa_bytes(sglang), _dsa_bytes(judge_module("current"))
    for name in release:
        assert torch.equal(release[name], judge[name]), name
    assert release["index3"].any() and not release["index1"].any()


def test_a_dsa_hybrid_indexing_by_the_global_layer_id_is_caught(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/hybrid_linear_global_ids.py", "--pool",
         "hybrid_linear_dsa", "--dtype", "bf16", "--backend", "dsa", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "FINDING " in out and "hybrid_linear_dsa" in out
