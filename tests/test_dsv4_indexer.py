"""The DeepSeek V4 indexer pool kind (issue 27): DeepSeekV4IndexerPool keeps one compress ratio's
indexer keys alone, in the DSA index-key layout, with as many pages as the ratio's KV pool
(ceil((size + global_page_size) / page_size)). The judge's and the builtin pool's pages, bytes
and refusals are pinned against the installed release's own class, and a pool that reserves a
page of its own size (0.5.21's count) is caught by the run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from harness.sut.probe.capabilities import Capabilities, probe
from harness.sut.probe.limits import limit_before
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from scenarios.materialize import dsv4_index_quant
from tests.helpers.installed_release import release_offering

LOC = [0, 1, 63, 64, 200, 300]  # the sink, a page's ends, a later page, an id past size + 64
FP8 = torch.float8_e4m3fn


def _pool(module, **keywords):
    options = dict(use_fp4_indexer=False, global_page_size=256, **keywords)
    return module.DeepSeekV4IndexerPool(256, 64, FP8, 128, 2, "cpu", False, **options)


def _keys(seed: int, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    drawn = torch.randn(tokens, 128, generator=torch.Generator().manual_seed(seed))
    return dsv4_index_quant(drawn.to(torch.bfloat16))


def _drive(module) -> dict[str, torch.Tensor]:
    pool = _pool(module)
    loc = torch.tensor(LOC)
    for layer_id in range(2):
        pool.set_index_k_scale_buffer(layer_id, loc, *_keys(layer_id, len(LOC)))
    # A ratio pool past layer 0 (start_layer 3): its door subtracts start_layer, its reader not.
    late = _pool(module, start_layer=3, end_layer=4)
    late.set_index_k_scale_buffer(4, loc[:2], *_keys(9, 2))
    seen = {f"L{i}": pool.index_k_with_scale_buffer[i].clone() for i in range(2)}
    seen.update({f"late{i}": late.get_index_k_with_scale_buffer(i).clone() for i in range(2)})
    return seen


def _modules():
    return {
        "release": release_offering("DeepSeekV4IndexerPool"),
        "judge": judge_module("current"),
        "builtin": builtin_module("current", "torch"),
    }


@pytest.mark.sglang
def test_the_judge_and_builtin_pools_keep_indexer_keys_as_the_installed_release():
    seen = {name: _drive(module) for name, module in _modules().items()}
    release = seen["release"]
    for name in ("judge", "builtin"):
        for buffer in release:
            assert torch.equal(release[buffer], seen[name][buffer]), (name, buffer)
    # ceil((256 + 256) / 64) = 8 pages of 64 * (128 + 4) bytes, not 0.5.21's (256 + 65) // 64.
    assert release["L0"].shape == (8, 64 * 132)
    keys, scales = _keys(1, len(LOC))
    page = release["L1"]
    # id 1: page 0, key at byte 128, scale at 64 * 128 + 4; id 300: page 4 (300 = 4 * 64 + 44).
    assert torch.equal(page[0, 128:256], keys[1].view(torch.uint8))
    assert torch.equal(page[0, 8192 + 4 : 8192 + 8], scales[1].view(torch.uint8))
    assert torch.equal(page[4, 44 * 128 : 45 * 128], keys[5].view(torch.uint8))
    assert torch.equal(page[4, 8192 + 44 * 4 : 8192 + 45 * 4], scales[5].view(torch.uint8))
    assert torch.equal(page[1, 0:128], keys[3].view(torch.uint8))  # id 64: page 1, slot 0
    assert not page[5:].any()  # the reserved pages past the ids written
    assert release["late1"].any() and not release["late0"].any()


def test_the_v4_indexer_quantises_a_key_per_token_to_e4m3_over_its_absmax():
    keys, scales = dsv4_index_quant(torch.tensor([[448.0] * 64 + [-896.0] * 64, [0.0] * 128]))
    assert scales.dtype == torch.float32 and scales.shape == (2, 1)
    assert scales[0, 0].item() == 2.0 and scales[1, 0].item() == pytest.approx(1e-4 / 448)
    assert keys.dtype == FP8 and keys[0, 0].item() == 224.0 and keys[0, 127].item() == -448.0
    assert not keys[1].float().any()


REFUSALS = {
    # (constructor keywords, door arguments) -> the exception the release raises
    "an FP4 cache": (dict(use_fp4_indexer=True), {}, AssertionError),
    "16-token pages": (dict(page_size=16), {}, AssertionError),
    "fp32 keys": ({}, dict(index_k=torch.zeros(2, 128)), AssertionError),
    "a 3-D scale": ({}, dict(index_k_scale=torch.zeros(1, 2, 1)), ValueError),
    "64-wide keys": ({}, dict(index_k=torch.zeros(2, 64, dtype=FP8)), AssertionError),
}


@pytest.mark.sglang
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_the_judge_and_builtin_pools_refuse_what_the_installed_release_refuses(case):
    built, door, error = REFUSALS[case]
    for name, module in _modules().items():
        keywords = dict(use_fp4_indexer=False, global_page_size=256)
        keywords.update({key: value for key, value in built.items() if key != "page_size"})
        pool = module.DeepSeekV4IndexerPool(
            256, built.get("page_size", 64), FP8, 128, 1, "cpu", False, **keywords
        )
        arguments = dict(
            layer_id=0,
            loc=torch.tensor([1, 2]),
            index_k=torch.zeros(2, 128, dtype=FP8),
            index_k_scale=torch.ones(2, 1),
        )
        arguments.update(door)
        with pytest.raises(error):
            pool.set_index_k_scale_buffer(**arguments)
        assert not any(buffer.any() for buffer in pool.index_k_with_scale_buffer), name
        with pytest.raises(NotImplementedError):  # no K/V
            pool.set_kv_buffer(None, torch.tensor([1]), None, None)


@pytest.mark.sglang
def test_a_release_without_the_logical_page_keyword_is_the_declared_limit():
    capabilities = probe(release_offering("DeepSeekV4IndexerPool"))
    assert capabilities.dsv4_indexer_global_page is True  # 0.5.22 on
    older = Capabilities(dsv4_indexer_global_page=False)
    limit = limit_before(older, "dsv4_indexer", "cpu", "dsv4_indexer")
    assert limit is not None and limit.name == "dsv4-indexer-no-global-page"
    assert limit_before(capabilities, "dsv4_indexer", "cpu", "dsv4_indexer") is None


def test_a_dsv4_indexer_pool_reserving_a_page_of_its_own_is_caught(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/dsv4_indexer_reserves_own_page.py", "--pool",
         "dsv4_indexer", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1 and "L0.index_k" in out and "shape" in out, out[-2000:]
