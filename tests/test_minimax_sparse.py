"""MiniMaxSparseKVPool (issue 27): every layer's K/V in a main MHA pool, a sparse layer's index K
beside an index V or alone (a value-disabled layer), written through set_fused_kv_index_buffer
as minimax_sparse_backend.py calls it. The judge is pinned against the installed release's own
pool, and two faults are caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc
from tests.helpers.installed_release import release_offering

DENSE, SPARSE, K_ONLY = [0], [1, 2], [2]


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _drive(module, write_loc, dtype: torch.dtype) -> dict:
    """Every buffer's bytes and the caller's index tensors after one write per layer (scaled),
    and the message of each refused door."""
    pool = module.MiniMaxSparseKVPool(
        size=16, page_size=1, dtype=dtype, head_num=2, head_dim=16, idx_head_dim=8,
        dense_layer_ids=DENSE, sparse_layer_ids=SPARSE, disable_value_sparse_layer_ids=K_ONLY,
        device="cpu", start_layer=0, end_layer=3,
    )  # fmt: skip
    loc = torch.tensor([3, 7, 11])
    seen: dict = {}
    pool.set_kv_buffer(
        _layer(0), write_loc(loc, physical=True), _rows(0, 3, 2, 16), _rows(1, 3, 2, 16), 2.0, 0.5
    )
    for layer_id in SPARSE:
        idx_k = _rows(10 + layer_id, 3, 1, 8)
        idx_v = None if layer_id in K_ONLY else _rows(20 + layer_id, 3, 1, 8)
        pool.set_fused_kv_index_buffer(
            _layer(layer_id), loc, _rows(layer_id, 3, 2, 16), _rows(5 + layer_id, 3, 2, 16),
            idx_k, idx_v, 2.0, None, 4.0, 0.25,
        )  # fmt: skip
        seen[f"caller_idx_k{layer_id}"] = idx_k.view(torch.uint8).clone()
        seen[f"divided_idx_k{layer_id}"] = not torch.equal(idx_k, _rows(10 + layer_id, 3, 1, 8))
    for layer_id in (0, 1, 2):
        seen[f"k{layer_id}"] = pool.get_key_buffer(layer_id).view(torch.uint8).clone()
        seen[f"v{layer_id}"] = pool.get_value_buffer(layer_id).view(torch.uint8).clone()
    seen["idx_k1"], seen["idx_v1"] = (
        b.view(torch.uint8).clone() for b in pool.get_index_kv_buffer(1)
    )
    seen["index_k2"] = pool.get_index_k_buffer(2).view(torch.uint8).clone()
    for door, args in (
        ("set_index_k_buffer", (_layer(1), loc, _rows(0, 3, 1, 8))),
        ("set_index_kv_buffer", (_layer(2), loc, _rows(0, 3, 1, 8), _rows(1, 3, 1, 8))),
    ):
        with pytest.raises(ValueError) as refused:
            getattr(pool, door)(*args)
        seen[door] = "sparse group" in str(refused.value) or "index V" in str(refused.value)
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_the_judge_writes_and_refuses_as_the_installed_release(dtype):
    sglang = release_offering("MiniMaxSparseKVPool")
    release = _drive(sglang, sglang.KVWriteLoc, dtype)
    judge = _drive(judge_module("current"), CurrentWriteLoc, dtype)
    assert release.keys() == judge.keys()
    for name in release:
        if isinstance(release[name], torch.Tensor):
            assert torch.equal(release[name], judge[name]), name
        else:
            assert release[name] == judge[name], name
    assert release["set_index_k_buffer"] and release["set_index_kv_buffer"]
    # On the way to a cast, the index K/V door divides the caller's idx_k in place (an MHA door),
    # the K-only door a new tensor: what docs/pools.md says, as the release does it.
    assert release["divided_idx_k1"] == (dtype != torch.bfloat16)
    assert release["divided_idx_k2"] is False


@pytest.mark.parametrize(
    "fixture, finding",
    [
        ("minimax_k_only_in_place", "[caller_tensors] caller tensor f0.L2.idx_k"),
        ("minimax_index_by_global_id", "[bytes] written bytes differ from the baseline"),
    ],
)  # fmt: skip
def test_a_faulty_minimax_pool_is_caught_by_the_default_run(fixture, finding, tmp_path, capsys):
    status = main(
        ["run", "--sut", f"tests/fixtures/{fixture}.py", "--pool", "minimax_sparse", "--dtype",
         "bf16", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert finding in out
