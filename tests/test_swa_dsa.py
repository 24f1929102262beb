"""The SWA-over-DSA pool kind (issue 27): SWAKVPool with a DSATokenToKVPool full side and an
MLATokenToKVPool SWA side (kv_cache_configurator's hybrid MLA SWA pool of a DSA model, 0.5.21
on), written by the dots3 model's own call. Its indexer door routes to the full side by the
layer's place among the full layers and refuses a SWA layer; the judge's bytes are pinned against
the installed release, and a pool handing the full side the model's layer id is caught by the
default run and at --profile ci."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from harness.sut.load.environments import cache_root
from harness.sut.probe.source_capabilities import probe_source
from pools.judge import judge_module
from tests.helpers.installed_release import release_offering

FULL_IDS, SWA_IDS = [0, 2], [1]


def _layer(layer_id: int):
    return type("Layer", (), {"layer_id": layer_id, "is_cross_attention": False})()


def _rows(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def _pool(module):
    mla = dict(page_size=64, device="cpu", enable_memory_saver=False, kv_lora_rank=32,
               qk_rope_head_dim=16)  # fmt: skip
    return module.SWAKVPool(
        size=128, size_swa=128, page_size=64, dtype=torch.bfloat16, head_num=1, head_dim=48,
        swa_attention_layer_ids=SWA_IDS, full_attention_layer_ids=FULL_IDS, device="cpu",
        full_kv_pool_class=module.DSATokenToKVPool, swa_kv_pool_class=module.MLATokenToKVPool,
        full_kv_pool_kwargs={**mla, "index_head_dim": 128, "kv_cache_dim": 48},
        swa_kv_pool_kwargs=dict(mla),
    )  # fmt: skip


def _written(module) -> dict[str, torch.Tensor]:
    """Both sides after the dots3 call on full layer 2 (indexer keys first) and SWA layer 1."""
    pool = _pool(module)
    loc, swa = torch.tensor([0, 3, 70, 129]), torch.tensor([0, 65, 66, 100])
    keys = _rows(4, 4, 128).float().to(torch.float8_e4m3fn)
    scales = torch.arange(1, 5, dtype=torch.float32).reshape(4, 1) / 8
    pool.set_index_k_scale_buffer(layer_id=2, loc=loc, index_k=keys, index_k_scale=scales)
    with pytest.raises(AssertionError):  # a SWA layer keeps no indexer keys
        pool.set_index_k_scale_buffer(layer_id=1, loc=loc, index_k=keys, index_k_scale=scales)
    pool.set_mla_kv_buffer(
        _layer(2), module.KVWriteLoc(loc), _rows(5, 4, 1, 32), _rows(6, 4, 1, 16)
    )
    pool.set_mla_kv_buffer(
        _layer(1), module.KVWriteLoc(loc, swa), _rows(7, 4, 1, 32), _rows(8, 4, 1, 16)
    )
    with pytest.raises(AssertionError):  # a SWA layer's write needs its swa_loc
        pool.set_mla_kv_buffer(_layer(1), module.KVWriteLoc(loc), _rows(7, 4, 1, 32), None)
    buffers = {f"kv{layer}": pool.get_key_buffer(layer) for layer in (0, 1, 2)}
    buffers.update(
        {f"index{layer}": pool.get_index_k_with_scale_buffer(layer) for layer in FULL_IDS}
    )
    return {name: buffer.view(torch.uint8).clone() for name, buffer in buffers.items()}


def test_the_judge_keeps_keys_on_the_full_side_by_the_layers_place():
    written = _written(judge_module("current"))
    assert written["index2"].any() and not written["index0"].any()
    assert written["kv1"].any() and written["kv2"].any() and not written["kv0"].any()


@pytest.mark.sglang
def test_the_installed_release_keeps_rows_and_keys_as_the_judge_says():
    sglang = release_offering("DSATokenToKVPool")
    release, judge = _written(sglang), _written(judge_module("current"))
    assert release.keys() == judge.keys()
    for name in release:
        assert torch.equal(release[name], judge[name]), name


@pytest.mark.parametrize("version, offers", [("0.5.18", False), ("0.5.21", True), ("0.5.23", True)])
def test_the_capability_is_read_from_the_release_source(version, offers):
    root = cache_root() / f"sglang-{version}"  # $KVH_CACHE, as the harness asks it
    if not (root / "sglang").is_dir():
        pytest.skip(f"sglang {version} is not in the release cache ({root})")
    assert probe_source(root).swa_dsa is offers


@pytest.mark.parametrize("profile", [(), ("--profile", "ci")])
def test_a_pool_handing_the_full_side_the_model_layer_id_is_caught(profile, tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/swa_dsa_index_by_global_id.py", "--pool", "swa_dsa",
         "--dtype", "bf16", *profile, "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "FINDING " in out and "swa_dsa" in out
