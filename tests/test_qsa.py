"""The QSA pool kind (issue 27): QSATokenToKVPool, a hybrid linear MHA pool whose full-attention
layers keep the QSA indexer's pending key ring, its RoPE positions and the compressed keys. The
judge is pinned against the installed release's own pool door by door, and a pool that writes
the ring at another row is caught by the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.judge import judge_module
from tests.helpers.installed_release import release_offering

FULL_LAYERS, RATIO = [1, 3], 4


def _pool(module, indexer_dtype: torch.dtype, **overrides):
    settings = dict(
        size=32, dtype=torch.bfloat16, page_size=8, head_num=1, head_dim=16,
        full_attention_layer_ids=FULL_LAYERS, device="cpu", mamba_pool=None,
        qsa_index_kv_heads=2, qsa_index_head_dim=16, qsa_compress_ratio=RATIO,
        qsa_token_topk=8, num_request_slots=4, qsa_indexer_dtype=indexer_dtype,
    )  # fmt: skip
    return module.QSATokenToKVPool(**{**settings, **overrides})


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 300


def _drive(module, indexer_dtype: torch.dtype) -> dict:
    """Every QSA buffer's bytes after the three doors' writes, and what each refusal raised."""
    pool = _pool(module, indexer_dtype)
    ring, compressed = torch.tensor([5, 9, 6, 13]), torch.tensor([3, 1], dtype=torch.int32)
    pool.set_qsa_key_state_buffer(3, ring, _rows(0, 4, 2, 16))  # fp32 -> the bf16 ring
    pool.set_qsa_key_state_buffer(1, ring[:1], _rows(1, 1, 2, 16).bfloat16())  # one row
    pool.set_qsa_rope_position_buffer(ring, torch.tensor([40, 41, 42, 43]))
    pool.set_qsa_rope_position_buffer(ring[2:], torch.tensor([[1, 2], [3, 4], [5, 6]]))
    pool.set_qsa_compressed_k_buffer(1, compressed, _rows(2, 2, 2, 16).bfloat16())
    seen = {"rope": pool.qsa_rope_position_buffer.clone()}
    for layer in FULL_LAYERS:
        seen[f"ring{layer}"] = pool.get_qsa_key_state_buffer(layer).view(torch.uint8).clone()
        seen[f"compressed{layer}"] = (
            pool.get_qsa_compressed_k_buffer(layer).view(torch.uint8).clone()
        )
    refusals = {
        "positions": lambda: pool.set_qsa_rope_position_buffer(ring, torch.zeros(2, 4)),
        "layer": lambda: pool.set_qsa_key_state_buffer(0, ring, _rows(0, 4, 2, 16)),
        "page": lambda: _pool(module, indexer_dtype, page_size=6),
        "topk": lambda: _pool(module, indexer_dtype, qsa_token_topk=6),
        "dtype": lambda: _pool(module, torch.float16),
        "past the ring": lambda: pool.set_qsa_key_state_buffer(
            1, torch.tensor([16]), _rows(0, 1, 2, 16)
        ),
    }  # fmt: skip
    for name, refused in refusals.items():
        with pytest.raises(Exception) as raised:
            refused()
        seen[f"raises {name}"] = raised.type.__name__
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("indexer_dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_the_judge_stores_and_refuses_as_the_installed_release(indexer_dtype):
    sglang = release_offering("QSATokenToKVPool")
    release = _drive(sglang, indexer_dtype)
    judge = _drive(judge_module("current"), indexer_dtype)
    assert release.keys() == judge.keys()
    for name in release:
        if isinstance(release[name], torch.Tensor):
            assert torch.equal(release[name], judge[name]), name
        else:
            assert release[name] == judge[name], name
    assert release["rope"][[5, 9, 6, 13]].tolist() == [[40] * 3, [41] * 3, [1, 3, 5], [2, 4, 6]]
    assert release["ring1"].flatten(1).ne(0).any(1).nonzero().flatten().tolist() == [5]


def test_a_ring_written_at_another_row_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/qsa_ring_at_full_slot.py", "--pool", "qsa", "--dtype",
         "bf16", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "buffer L1.qsa_state" in out or "buffer L3.qsa_state" in out, out[-2000:]
