"""Page-interleave pools (issue 27): PageInterleaveMHATokenToKVPool,
PageInterleaveMLATokenToKVPool and PageInterleaveDSATokenToKVPool keep only the tokens of the
logical pages their rank owns, at local rows (the DSA pool its indexer keys too). The judge is
pinned against the installed release's own pools (built by the loader with a stood-in shard
group), and a rank that keeps its peers' tokens, or a DSA pool that keeps indexer keys by
logical id, is caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from pools.write_loc import CurrentWriteLoc
from tests.helpers.installed_release import release_offering

SIZE, PAGE = 64, 4
# Logical ids over both ranks' pages: rank 0 owns pages 0, 2, 4, ... (ids 0-3, 8-11, ...).
LOC = [1, 5, 9, 13, 30, 34, 60, 3]


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _pool(module, mla: bool, dtype: torch.dtype, shard_rank: int):
    common = dict(size=SIZE, page_size=PAGE, dtype=dtype, layer_num=2, device="cpu",
                  enable_memory_saver=False, shard_rank=shard_rank, shard_size=2)  # fmt: skip
    if mla:
        return module.PageInterleaveMLATokenToKVPool(kv_lora_rank=32, qk_rope_head_dim=16, **common)
    return module.PageInterleaveMHATokenToKVPool(head_num=2, head_dim=16, **common)


def _drive(module, write_loc, mla: bool, dtype: torch.dtype, shard_rank: int) -> dict:
    """Every layer's bytes, the rows written and the caller's tensors after each door's write."""
    pool = _pool(module, mla, dtype, shard_rank)
    loc = write_loc(torch.tensor(LOC), physical=True)
    n = len(LOC)
    callers = {}
    if mla:
        callers = {"nope": _rows(2, n, 1, 32), "rope": _rows(3, n, 1, 16)}
        pool.set_mla_kv_buffer(_layer(1), loc, callers["nope"], callers["rope"])
        callers["row"] = _rows(4, n, 1, 48)
        pool.set_kv_buffer(_layer(0), loc, callers["row"], None)
    else:
        callers = {"k": _rows(2, n, 2, 16).float(), "v": _rows(3, n, 2, 16).float()}
        pool.set_kv_buffer(_layer(1), loc, callers["k"], callers["v"], 2.0, 0.5)
        callers["k0"], callers["v0"] = _rows(4, n, 2, 16), _rows(5, n, 2, 16)
        pool.set_kv_buffer(_layer(0), loc, callers["k0"], callers["v0"])
    seen = {f"caller.{name}": tensor for name, tensor in callers.items()}
    for layer_id in (0, 1):
        key = pool.get_key_buffer(layer_id).view(torch.uint8)
        seen[f"k{layer_id}"] = key.clone()
        seen[f"written{layer_id}"] = key.flatten(1).ne(0).any(1).nonzero().flatten().tolist()
        if not mla:
            seen[f"v{layer_id}"] = pool.get_value_buffer(layer_id).view(torch.uint8).clone()
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("shard_rank", [0, 1])
@pytest.mark.parametrize("mla", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_the_judge_keeps_the_rank_s_pages_as_the_installed_release(mla, dtype, shard_rank):
    sglang = release_offering("PageInterleaveMHATokenToKVPool", "PageInterleaveMLATokenToKVPool")
    release = _drive(sglang, sglang.KVWriteLoc, mla, dtype, shard_rank)
    judge = _drive(judge_module("current"), CurrentWriteLoc, mla, dtype, shard_rank)
    assert release.keys() == judge.keys()
    for name in release:
        if isinstance(release[name], torch.Tensor):
            assert torch.equal(release[name].view(torch.uint8), judge[name].view(torch.uint8)), name
        else:
            assert release[name] == judge[name], name
    # Rank 0 keeps ids 1, 9, 34, 3 at local rows 1, 5, 18, 3; rank 1 ids 5, 13, 30, 60 at 1, 5,
    # 14, 28 (bf16 draws, so no written row is all zero bytes; MLA may skip its reserved slot).
    assert release["written1"] == ([1, 3, 5, 18] if shard_rank == 0 else [1, 5, 14, 28])


def test_a_rank_keeping_its_peers_pages_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/page_interleave_keeps_every_page.py", "--pool",
         "page_interleave_mha,page_interleave_mla", "--dtype", "bf16", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    for kind in ("page_interleave_mha", "page_interleave_mla"):  # its table cell: passed/findings
        row = next(line for line in out.splitlines() if line.startswith(f"| {kind} "))
        passed, findings = row.split("|")[3].strip().split("/")
        assert int(findings) > 0, row


DSA_LOC = [1, 70, 130, 200, 64, 0, 300]  # 64-token pages: rank 0 owns ids 0-63, 128-191, 256-319


def _drive_dsa(module, write_loc, shard_rank: int) -> dict:
    pool = module.PageInterleaveDSATokenToKVPool(
        size=256, page_size=64, dtype=torch.bfloat16, kv_lora_rank=32, qk_rope_head_dim=16,
        layer_num=2, device="cpu", enable_memory_saver=False, index_head_dim=128,
        kv_cache_dim=48, shard_rank=shard_rank, shard_size=2,
    )  # fmt: skip
    n, loc = len(DSA_LOC), torch.tensor(DSA_LOC)
    keys = _rows(5, n, 128).float().to(torch.float8_e4m3fn)
    scales = torch.rand(n, 1, generator=torch.Generator().manual_seed(6))
    pool.set_index_k_scale_buffer(1, loc, keys, scales)
    pool.set_mla_kv_buffer(_layer(1), loc, _rows(2, n, 1, 32), _rows(3, n, 1, 16))
    pool.set_kv_buffer(_layer(0), write_loc(loc, physical=True), _rows(4, n, 1, 48), None)
    return {
        "kv0": pool.get_key_buffer(0).view(torch.uint8).clone(),
        "kv1": pool.get_key_buffer(1).view(torch.uint8).clone(),
        "index1": pool.get_index_k_with_scale_buffer(1).clone(),
    }


@pytest.mark.sglang
@pytest.mark.parametrize("shard_rank", [0, 1])
def test_the_judge_interleaves_dsa_rows_and_indexer_keys_as_the_installed_release(shard_rank):
    sglang = release_offering("PageInterleaveDSATokenToKVPool")
    release = _drive_dsa(sglang, sglang.KVWriteLoc, shard_rank)
    judge = _drive_dsa(judge_module("current"), CurrentWriteLoc, shard_rank)
    for name in release:
        assert torch.equal(release[name], judge[name]), name
    # Rank 0's keys: ids 1, 130, 0, 300 at local slots 1, 66, 0, 172 (pages 0, 1, 0, 2).
    index = release["index1"]
    written = sorted(
        page * 64 + slot
        for page in range(index.shape[0])
        for slot in range(64)
        if index[page, slot * 128 : (slot + 1) * 128].any()
    )
    assert written == ([0, 1, 66, 172] if shard_rank == 0 else [0, 6, 72])


def test_a_dsa_pool_keeping_indexer_keys_by_logical_id_is_caught(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/page_interleave_index_k_by_logical_id.py", "--pool",
         "page_interleave_dsa", "--dtype", "bf16", "--backend", "dsa", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1 and "index_k" in out, out[-2000:]
