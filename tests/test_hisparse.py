"""HiSparse device pools (issue 27): HiSparseMHAMainPool and HiSparseDSATokenToKVPool write a
logical token id at its device slot, full_to_hisparse_device_index_mapping[loc]. The judge is
pinned against the installed release's own pools, and a pool that writes the logical id is
caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc
from tests.helpers.installed_release import release_offering

SIZE, DSA_PAGE = 128, 64


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _pool(module, mla: bool, dtype: torch.dtype):
    if mla:
        return module.HiSparseDSATokenToKVPool(
            size=SIZE, page_size=DSA_PAGE, kv_lora_rank=32, dtype=dtype, qk_rope_head_dim=16,
            layer_num=2, device="cpu", index_head_dim=128, enable_memory_saver=False,
            kv_cache_dim=48,
        )  # fmt: skip
    return module.HiSparseMHAMainPool(
        size=SIZE, page_size=1, dtype=dtype, head_num=2, head_dim=16, layer_num=2, device="cpu",
        enable_memory_saver=False,
    )  # fmt: skip


def _drive(module, write_loc, mla: bool, dtype: torch.dtype) -> dict:
    """Layer 1's bytes after a write through each door, and what each refusal raised."""
    seen: dict = {}
    unmapped = _pool(module, mla, dtype)
    with pytest.raises((AssertionError, AttributeError)) as unregistered:  # no mapping yet
        unmapped.set_kv_buffer(
            _layer(1), write_loc(torch.tensor([1])), _rows(0, 1, 2, 16), _rows(1, 1, 2, 16)
        )
    seen["unregistered"] = unregistered.type.__name__
    pool = _pool(module, mla, dtype)
    rows = SIZE + (DSA_PAGE if mla else 1)
    pool.register_mapping(torch.arange(rows).roll(5))  # logical id s lands at device slot s - 5
    loc = write_loc(torch.tensor([0, 7, 9, 30]), physical=True)
    if mla:
        pool.set_mla_kv_buffer(_layer(1), loc, _rows(2, 4, 1, 32), _rows(3, 4, 1, 16))
        pool.set_kv_buffer(_layer(0), loc, _rows(4, 4, 1, 48), _rows(5, 4, 1, 32))
    else:
        pool.set_kv_buffer(
            _layer(1), loc, _rows(2, 4, 2, 16).float(), _rows(3, 4, 2, 16).float(), 2.0, 0.5
        )
    for layer_id in (0, 1):
        key = pool.get_key_buffer(layer_id).view(torch.uint8)
        seen[f"k{layer_id}"] = key.clone()
        seen[f"written{layer_id}"] = key.flatten(1).ne(0).any(1).nonzero().flatten().tolist()
        if not mla:
            seen[f"v{layer_id}"] = pool.get_value_buffer(layer_id).view(torch.uint8).clone()
    with pytest.raises(IndexError):  # a logical id past the mapping
        pool.set_kv_buffer(
            _layer(1), write_loc(torch.tensor([rows])), _rows(0, 1, 2, 16), _rows(1, 1, 2, 16)
        )
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("mla", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_the_judge_translates_and_refuses_as_the_installed_release(mla, dtype):
    sglang = release_offering("HiSparseMHAMainPool", "HiSparseDSATokenToKVPool")
    release = _drive(sglang, sglang.KVWriteLoc, mla, dtype)
    judge = _drive(judge_module("current"), CurrentWriteLoc, mla, dtype)
    assert release.keys() == judge.keys()
    for name in release:
        if isinstance(release[name], torch.Tensor):
            assert torch.equal(release[name], judge[name]), name
        else:
            assert release[name] == judge[name], name
    # Logical 7, 9 and 30 at device 2, 4 and 25; logical 0 at device rows - 5, except where the
    # MLA store skips its reserved slot, which only a loc of 0 after translation is.
    assert set(release["written1"]) >= {2, 4, 25}


def test_a_pool_writing_the_logical_id_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/hisparse_ignores_mapping.py", "--pool",
         "hisparse_mha,hisparse_dsa", "--dtype", "bf16", "--backend", "plain,dsa", "--out",
         str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "hisparse_mha" in out and "hisparse_dsa" in out and "FINDING " in out


def _index_keys(module, loc: torch.Tensor) -> torch.Tensor:
    """Layer 1's indexer key cache after one store at `loc` (a mapping registered, so a pool that
    translated the loc would write elsewhere)."""
    pool = _pool(module, True, torch.bfloat16)
    pool.register_mapping(torch.arange(SIZE + DSA_PAGE).roll(5))
    n = loc.shape[0]
    keys = _rows(6, n, 128).float().mul(40).to(torch.float8_e4m3fn)
    scales = _rows(7, n, 1).float().abs()
    pool.set_index_k_scale_buffer(layer_id=1, loc=loc, index_k=keys, index_k_scale=scales)
    with pytest.raises(AssertionError):  # keys not in fp8
        pool.set_index_k_scale_buffer(1, loc, keys.float(), scales)
    return pool.get_index_k_with_scale_buffer(1).clone()


@pytest.mark.sglang
def test_the_judge_stores_dsa_indexer_keys_by_logical_id_as_the_installed_release():
    sglang = release_offering("HiSparseDSATokenToKVPool")
    loc = torch.tensor([1, 63, 64, 130, 200], dtype=torch.int32)
    release, judge = _index_keys(sglang, loc), _index_keys(judge_module("current"), loc)
    assert release.shape == judge.shape == (5, 64 * 132)  # (2 * 128 + 64 + 1) // 64 pages
    assert torch.equal(release, judge)
    assert release[2, 2 * 128 : 3 * 128].ne(0).any()  # logical 130: page 2, token 2


def test_indexer_keys_at_the_device_slot_are_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/hisparse_index_k_at_device_slot.py", "--pool",
         "hisparse_dsa", "--dtype", "bf16", "--backend", "dsa", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert ".index_k" in out, out[-2000:]
