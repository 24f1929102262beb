"""A speculative draft's commit (issue 27): MHATokenToKVPool.set_kv_buffer_prefix_valid writes
each request row's first commit_lens[r] tokens, as models/dspark.py calls it. The judge is
pinned against the installed release, bytes and caller tensors; the probe that tells 0.5.14 to
0.5.21's in-place division apart is run on it; a door that writes every row (a mutant) is caught."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from harness.sut.probe.capabilities import probe
from pools.judge import judge_module
from tests.helpers.installed_release import release_offering


def _layer():
    return type("Layer", (), {"layer_id": 0, "is_cross_attention": False})()


def _drive(module, dtype: torch.dtype) -> dict:
    pool = module.MHATokenToKVPool(
        size=32, page_size=1, dtype=dtype, head_num=2, head_dim=16, layer_num=1, device="cpu",
        enable_memory_saver=False,
    )  # fmt: skip
    generator = torch.Generator().manual_seed(3)
    k, v = (torch.randn(6, 2, 16, generator=generator) for _ in range(2))
    loc_2d, commit_lens = torch.tensor([[4, 5, 6], [9, 10, 11]]), torch.tensor([2, 0])
    pool.set_kv_buffer_prefix_valid(_layer(), loc_2d, commit_lens, k, v, 2.0, 0.5)
    seen = {
        "k": pool.get_key_buffer(0).view(torch.uint8).clone(),
        "v": pool.get_value_buffer(0).view(torch.uint8).clone(),
        "caller_k": k.clone(),
        "written": pool.get_key_buffer(0).view(torch.uint8).flatten(1).ne(0).any(1)
        .nonzero().flatten().tolist(),
    }  # fmt: skip
    for bad in ((torch.tensor([4, 5]), commit_lens), (loc_2d, torch.tensor([1, 1, 1]))):
        with pytest.raises(ValueError):
            pool.set_kv_buffer_prefix_valid(_layer(), *bad, k[:2], v[:2])
    return seen


@pytest.mark.sglang
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_the_judge_commits_as_the_installed_release(dtype):
    sglang = release_offering("MHATokenToKVPool")
    release, judge = _drive(sglang, dtype), _drive(judge_module("current"), dtype)
    for name in release:
        equal = torch.equal if isinstance(release[name], torch.Tensor) else (lambda a, b: a == b)
        assert equal(release[name], judge[name]), name
    assert release["written"] == [4, 5]  # row 0's first two tokens; row 1 commits none


@pytest.mark.sglang
def test_the_probe_reads_whether_the_door_divides_the_callers_tensors():
    capabilities = probe(release_offering("MHATokenToKVPool"))
    assert capabilities.prefix_valid_door is True
    assert capabilities.prefix_valid_divides_caller is False  # 0.5.22 on divide a copy


def test_a_door_writing_every_row_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "mutants.zoo.prefix_valid_writes_all", "--pool", "mha",
         "--backend", "dspark", "--dtype", "bf16", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "`prefix-valid`: [untouched]" in out
