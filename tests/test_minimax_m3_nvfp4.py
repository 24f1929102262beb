"""MiniMaxM3Nvfp4KVPool (issue 27): the byte-copy doors of its main and index sub-pools,
set_quantized_kv_buffer and set_quantized_k_buffer, as a retracted request's restore calls them
(backends/retraction_restore.py). The judge and the builtin pools are pinned against the
installed release's own pool, byte for byte and refusal for refusal, and a fault is caught by
the default run."""

from __future__ import annotations

import pytest
import torch

from harness.cli import main
from pools.builtin.sut import builtin_module
from pools.judge import judge_module
from tests.helpers.installed_release import release_offering

HEADS, SIZE = 2, 256  # 3 pages of 128 slots: ids 0..383


def _pool(module, **overrides):
    kwargs = dict(
        size=SIZE, page_size=128, dtype=torch.bfloat16, head_num=HEADS, head_dim=128,
        idx_head_dim=128, dense_layer_ids=[], sparse_layer_ids=[0, 1],
        disable_value_sparse_layer_ids=[0, 1], device="cpu", enable_memory_saver=False,
        start_layer=0, end_layer=2,
    )  # fmt: skip
    return module.MiniMaxM3Nvfp4KVPool(**{**kwargs, **overrides})


def _bytes(start: int, *shape: int) -> torch.Tensor:
    """Distinct non-zero bytes, so that a count of non-zero bytes counts the bytes written."""
    count = torch.Size(shape).numel()
    return (torch.arange(start, start + count) % 251 + 1).to(torch.uint8).reshape(shape)


def _scales(start: int, *shape: int) -> torch.Tensor:
    return _bytes(start, *shape).view(torch.float8_e4m3fn)  # as get_quantized_rows hands them


def _slabs(pool) -> dict:
    main, index = pool.main_pool, pool.index_k_pool
    return {
        **{f"main{i}": row.clone() for i, row in enumerate(main.rows)},
        **{f"index{i}": row.clone() for i, row in enumerate(index.rows)},
    }


def _drive(module) -> dict:
    """Each sub-pool's page rows after a few writes, and what each refused call raised."""
    pool = _pool(module)
    seen: dict = {"row_bytes": (pool.main_pool.row_bytes, pool.index_k_pool.row_bytes)}
    main, index = pool.main_pool, pool.index_k_pool
    loc = torch.tensor([1, 130, 383])
    main.set_quantized_kv_buffer(
        1, loc, _bytes(0, 3, HEADS, 64), _bytes(100, 3, HEADS, 64),
        _scales(200, 3, HEADS, 8), _scales(50, 3, HEADS, 8),
    )  # fmt: skip
    one = torch.tensor([129], dtype=torch.int32)  # any integer loc: the door takes .long()
    main.set_quantized_kv_buffer(
        0, one, _bytes(7, 1, HEADS, 64), _bytes(9, 1, HEADS, 64),
        _scales(11, 1, HEADS, 8), _scales(13, 1, HEADS, 8),
    )  # fmt: skip
    index.set_quantized_k_buffer(pool.index_k_layer_id_mapping[1], torch.tensor([5, 383]),
                                 _bytes(30, 2, 64), _scales(40, 2, 8))  # fmt: skip
    # No bounds check: torch's floor division sends -1 to the last page's last row.
    index.set_quantized_k_buffer(0, torch.tensor([-1]), _bytes(60, 1, 64), _scales(70, 1, 8))
    before = _slabs(pool)
    for name, call in (
        ("rows", lambda: index.set_quantized_k_buffer(0, loc, _bytes(0, 2, 64), _scales(0, 2, 8))),
        ("page", lambda: main.set_quantized_kv_buffer(
            0, torch.tensor([384]), _bytes(0, 1, HEADS, 64), _bytes(0, 1, HEADS, 64),
            _scales(0, 1, HEADS, 8), _scales(0, 1, HEADS, 8))),
    ):  # fmt: skip
        with pytest.raises(Exception) as refused:
            call()
        seen[f"refused_{name}"] = type(refused.value).__name__
    seen.update(_slabs(pool))
    seen["unchanged_by_refusals"] = all(torch.equal(before[n], seen[n]) for n in before)
    for name, overrides in (
        ("page_size", dict(page_size=64)),
        ("dense", dict(dense_layer_ids=[0], sparse_layer_ids=[1],
                       disable_value_sparse_layer_ids=[1])),
        ("index_v", dict(disable_value_sparse_layer_ids=[1])),
    ):  # fmt: skip
        with pytest.raises(ValueError):
            _pool(module, **overrides)
        seen[f"constructor_refuses_{name}"] = True
    return seen


@pytest.fixture(scope="module")
def release() -> dict:
    return _drive(release_offering("MiniMaxM3Nvfp4KVPool"))


@pytest.mark.sglang
@pytest.mark.parametrize("sut", ["judge", "builtin"])
def test_pools_write_and_refuse_as_the_installed_release(release, sut):
    module = judge_module("current") if sut == "judge" else builtin_module("current", "torch")
    ours = _drive(module)
    assert ours.keys() == release.keys()
    for name, value in release.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(ours[name], value), name
        else:
            assert ours[name] == value, name


@pytest.mark.sglang
def test_the_release_page_rows_hold_these_bytes(release):
    # Components abut (each a multiple of 128 bytes): K, K scales, V, V scales; index K, scales.
    assert release["row_bytes"] == (HEADS * 128 * (64 + 8 + 64 + 8), 128 * (64 + 8))
    main1, main0, index0 = release["main1"], release["main0"], release["index0"]
    k, v = _bytes(0, 3, HEADS, 64), _bytes(100, 3, HEADS, 64)
    k_scale, v_scale = _bytes(200, 3, HEADS, 8), _bytes(50, 3, HEADS, 8)
    # slot 130: page 1, row 2; head 1's K payload at (1 * 128 + 2) * 64.
    assert torch.equal(main1[1, 8320:8384], k[1, 1])
    # slot 383: page 2, row 127; head 0's K scales after the K payload (2 * 128 * 64 bytes).
    assert torch.equal(main1[2, 16384 + 127 * 8 : 16384 + 128 * 8], k_scale[2, 0])
    # slot 1: page 0, row 1; V payload from 2 * 128 * 72, V scales from 2 * 128 * 136.
    assert torch.equal(main1[0, 18432 + 64 : 18432 + 128], v[0, 0])
    assert torch.equal(main1[0, 34816 + 129 * 8 : 34816 + 130 * 8], v_scale[0, 1])
    # The int32 loc 129 on layer 0: page 1, row 1, head 0.
    assert torch.equal(main0[1, 64:128], _bytes(7, 1, HEADS, 64)[0, 0])
    # Index layer 1, slot 5: payload at 5 * 64, scales at 128 * 64 + 5 * 8.
    assert torch.equal(release["index1"][0, 320:384], _bytes(30, 2, 64)[0])
    assert torch.equal(release["index1"][0, 8232:8240], _bytes(40, 2, 8)[0])
    # The id -1 went to page 2, row 127.
    assert torch.equal(index0[2, 127 * 64 : 128 * 64], _bytes(60, 1, 64)[0])
    # Nothing else: exactly the bytes handed are non-zero (4 main tokens, 3 index ones).
    written = sum(int(release[n].count_nonzero()) for n in ("main0", "main1", "index0", "index1"))
    assert written == 4 * HEADS * 144 + 3 * 72
    assert release["refused_rows"] == "ValueError" and release["refused_page"] == "IndexError"
    assert release["unchanged_by_refusals"]


def test_a_head_major_layout_read_token_major_is_caught_by_the_default_run(tmp_path, capsys):
    status = main(
        ["run", "--sut", "tests/fixtures/m3_nvfp4_token_major_heads.py", "--pool",
         "minimax_m3_nvfp4", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    assert "[bytes] written bytes differ from the baseline at buffer L0.main" in out
