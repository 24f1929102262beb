"""The torch engine's fast scatter is byte-identical to the reference engine's token loop.

Buffers and rows hold random bytes, so NaN payloads and signalling-NaN patterns of the wide
words it moves through are covered too.
"""

from __future__ import annotations

import pytest
import torch

from pools.builtin.engines.reference import ReferenceEngine
from pools.builtin.engines.torch_engine import TorchEngine

STORE_DTYPES = (torch.bfloat16, torch.float16, torch.float32, torch.uint8)


def _random(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=generator)
    return raw.view(dtype).reshape(shape)


def _both(buffer: torch.Tensor, write) -> tuple[torch.Tensor, torch.Tensor, object, object]:
    """Run `write(engine, buffer)` on both engines over copies; return buffers and errors."""
    results = []
    for engine in (ReferenceEngine(), TorchEngine()):
        target, error = buffer.clone(), None
        try:
            write(engine, target)
        except (IndexError, RuntimeError) as raised:
            error = type(raised).__name__
        results += [target, error]
    return results[0], results[2], results[1], results[3]


LOCS = {
    "distinct": [5, 9, 1, 30, 2],
    "duplicates": [5, 9, 5, 30, 9, 5],
    "padding-sink": [7, 3, 0, 0, 0],
    "one": [12],
    "negative": [4, -1, 6],
    "out-of-range": [4, 31, 40],
    "empty": [],
}


@pytest.mark.parametrize("loc_dtype", (torch.int64, torch.int32))
@pytest.mark.parametrize("name", LOCS)
@pytest.mark.parametrize("dtype", STORE_DTYPES)
def test_scatter_matches_reference(name: str, dtype: torch.dtype, loc_dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(len(name))
    buffer = _random((32, 4, 24), dtype, generator)
    loc = torch.tensor(LOCS[name], dtype=loc_dtype)
    rows = _random((loc.shape[0], 4, 24), dtype, generator)
    want, got, want_error, got_error = _both(buffer, lambda e, b: e.scatter(b, loc, rows))
    assert got_error == want_error
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


@pytest.mark.parametrize("layout", ("transposed", "sliced", "odd-width"))
def test_non_contiguous_and_odd_rows_match_reference(layout: str) -> None:
    generator = torch.Generator().manual_seed(3)
    width = 3 if layout == "odd-width" else 16
    buffer = _random((40, 2, width), torch.bfloat16, generator)
    loc = torch.tensor([8, 3, 3, 17, 0, 0, 39])
    source = _random((7, width, 2), torch.bfloat16, generator).transpose(1, 2)
    if layout == "sliced":
        source = _random((7, 2, width + 5), torch.bfloat16, generator)[..., 5:]
    assert layout == "odd-width" or not source.is_contiguous()
    want, got, want_error, got_error = _both(buffer, lambda e, b: e.scatter(b, loc, source))
    assert (got_error, want_error) == (None, None)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_store_kv_and_nope_rope_match_reference() -> None:
    generator = torch.Generator().manual_seed(11)
    loc = torch.tensor([6, 2, 6, 0, 0, 14], dtype=torch.int32)
    k = _random((6, 8, 128), torch.bfloat16, generator)
    v = _random((6, 8, 64), torch.bfloat16, generator)
    k_buffer = _random((16, 8, 128), torch.bfloat16, generator)
    v_buffer = _random((16, 8, 64), torch.bfloat16, generator)
    outputs = []
    for engine in (ReferenceEngine(), TorchEngine()):
        kb, vb = k_buffer.clone(), v_buffer.clone()
        engine.store_kv(
            kb, vb, loc, k.clone(), v.clone(), None, None, torch.bfloat16, torch.bfloat16
        )
        outputs.append((kb, vb))
    assert torch.equal(outputs[0][0].view(torch.uint8), outputs[1][0].view(torch.uint8))
    assert torch.equal(outputs[0][1].view(torch.uint8), outputs[1][1].view(torch.uint8))
    nope, rope = (
        _random((6, 1, 512), torch.bfloat16, generator),
        _random((6, 1, 64), torch.bfloat16, generator),
    )
    latent = _random((16, 1, 576), torch.bfloat16, generator)
    want, got, want_error, got_error = _both(
        latent, lambda e, b: e.store_nope_rope(b, loc, nope, rope, torch.bfloat16, torch.bfloat16)
    )
    assert (got_error, want_error) == (None, None)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_many_duplicates_last_writer_wins_under_parallel_kernels() -> None:
    # Large enough that ATen splits the copy across threads, where duplicates race: without
    # de-duplication most runs differ (how many depends on the load), so twenty runs catch it.
    generator = torch.Generator().manual_seed(5)
    loc = torch.randint(1, 64, (4096,), generator=generator)
    rows = _random((4096, 8, 128), torch.bfloat16, generator)
    want = _random((64, 8, 128), torch.bfloat16, generator)
    buffer = want.clone()
    ReferenceEngine().scatter(want, loc, rows)
    for _ in range(20):
        got = buffer.clone()
        TorchEngine().scatter(got, loc, rows)
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
