"""Every Triton kernel path against the torch engine on the same device (interpreted on CPU,
compiled on a GPU): masked head dims, asymmetric v, int32/int64 locs, strided, aliased and
broadcast inputs, MLA rows and nope + rope, HND pages, slot ids above 2**31, bad locs."""

from __future__ import annotations

import pytest
import torch

from pools.builtin.engines.torch_engine import TorchEngine
from pools.builtin.engines.triton_engine import TritonEngine

# Compiled on a CUDA device where there is one (TRITON_INTERPRET on CPU otherwise).
pytestmark = pytest.mark.gpu

TRITON = TritonEngine()
DEVICE = "cpu" if TRITON.interpreted else "cuda"
FP8 = torch.float8_e4m3fn


def _both(write, *tensors: torch.Tensor) -> None:
    """Run `write(engine, *copies)` on Triton and torch, and require identical bytes everywhere."""
    outcomes = []
    for engine in (TRITON, TorchEngine()):
        copies = [t.clone() for t in tensors]
        write(engine, *copies)
        outcomes.append(copies)
    for got, want in zip(*outcomes):
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def _randn(*shape, dtype=torch.bfloat16) -> torch.Tensor:
    return (torch.randn(*shape) * 8).to(dtype).to(DEVICE)


@pytest.mark.parametrize(
    "head_dim, v_head_dim, loc_dtype",
    [(80, 80, torch.int64), (80, 48, torch.int32), (24, 128, torch.int64)],
)
@pytest.mark.parametrize("dtype", [torch.bfloat16, FP8, torch.float8_e5m2])
def test_mha_fused_kv_any_head_dim_and_loc_dtype(head_dim, v_head_dim, loc_dtype, dtype):
    store = torch.uint8 if dtype.itemsize == 1 else dtype
    loc = torch.tensor([5, 1, 33, 7, 20], dtype=loc_dtype, device=DEVICE)
    buffers = [torch.zeros(40, 2, d, dtype=store, device=DEVICE) for d in (head_dim, v_head_dim)]
    k, v = (
        _randn(5, 2, head_dim, dtype=torch.float32),
        _randn(5, 2, v_head_dim, dtype=torch.float32),
    )
    _both(
        lambda e, kb, vb, k, v: e.store_kv(kb, vb, loc, k, v, 0.5, 2.0, dtype, store),
        *buffers,
        k,
        v,
    )


def test_strided_and_aliased_inputs_are_divided_once_in_order():
    qkv = _randn(6, 3, 2, 32)  # a fused qkv projection: k and v are strided slices
    buffers = [torch.zeros(16, 2, 32, dtype=torch.uint8, device=DEVICE) for _ in range(2)]
    loc = torch.tensor([3, 4, 5, 9, 10, 11], device=DEVICE)
    _both(
        lambda e, kb, vb, qkv: e.store_kv(
            kb, vb, loc, qkv[:, 1], qkv[:, 2], 0.3, 1.7, FP8, torch.uint8
        ),
        *buffers,
        qkv,
    )
    # k is v: torch divides the one tensor by k_scale, then by v_scale, before either store.
    _both(
        lambda e, kb, vb, kv: e.store_kv(kb, vb, loc, kv, kv, 0.3, 1.7, FP8, torch.uint8),
        *buffers,
        _randn(6, 2, 32),
    )
    # One head broadcast to both heads of every row: divided once, then stored twice.
    _both(
        lambda e, kb, vb, k, v: e.store_kv(
            kb, vb, loc, k, v, torch.tensor(0.3, device=DEVICE), 2.0, FP8, torch.uint8
        ),
        *buffers,
        _randn(6, 1, 32),
        _randn(6, 2, 32),
    )


@pytest.mark.parametrize("rope", [16, 0])
def test_mla_rows_and_nope_rope_from_separate_tensors(rope):
    buffer = torch.full((24, 1, 80 + rope), 0xA5, dtype=torch.uint8, device=DEVICE)
    loc = torch.tensor([2, 9, 23, 0, 0], dtype=torch.int32, device=DEVICE)
    nope = _randn(5, 1, 80)
    rope_part = _randn(5, 1, rope) if rope else None
    _both(lambda e, b: e.store_nope_rope(b, loc, nope, rope_part, FP8, torch.uint8), buffer)
    row = torch.cat([nope, rope_part], -1) if rope else nope
    _both(
        lambda e, b: e.store_rows(
            b, loc, row.transpose(0, 1).contiguous().transpose(0, 1), FP8, torch.uint8
        ),
        buffer,
    )


@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_hnd_page_major_scatter_matches_torch(page_size):
    pages, heads, dim = 8, 2, 40
    buffer = torch.full((pages, heads, page_size, dim), -1.0, dtype=torch.bfloat16, device=DEVICE)
    slots = torch.randperm(pages * page_size)[:7].to(DEVICE)
    rows = _randn(7, heads, dim)
    want = buffer.clone()
    want[slots // page_size, :, slots % page_size] = rows
    got = buffer.clone()
    TRITON.scatter_hnd(got, slots, rows)
    assert torch.equal(got, want)


def test_int64_slot_ids_above_2_31_are_not_narrowed():
    """A stride-0 view gives a buffer of 2**31 + 16 rows over one row of memory."""
    memory = torch.zeros(1, 2, 16, dtype=torch.bfloat16, device=DEVICE)
    buffer = memory.expand(2**31 + 16, 2, 16)
    rows = _randn(1, 2, 16)
    TRITON.scatter(buffer, torch.tensor([2**31 + 8], device=DEVICE), rows)
    assert torch.equal(memory, rows)


def test_bad_locs_raise_like_torch_and_duplicates_keep_the_last_writer():
    buffer = torch.zeros(8, 2, 16, dtype=torch.bfloat16, device=DEVICE)
    with pytest.raises(IndexError):
        TRITON.scatter(buffer, torch.tensor([1, 8], device=DEVICE), _randn(2, 2, 16))
    with pytest.raises(IndexError):  # like torch: 2+ rows must be one per slot
        TRITON.scatter(buffer, torch.tensor([1, 2, 3], device=DEVICE), _randn(2, 2, 16))
    one = _randn(1, 2, 16)  # like torch's buffer[loc] = rows: one row broadcasts over every slot
    _both(lambda e, b: e.scatter(b, torch.tensor([1, 2, 6], device=DEVICE), one), buffer)
    with pytest.raises(IndexError):  # the MLA door broadcasts nothing (SGLang's row mask)
        TRITON.scatter_columns(buffer, torch.tensor([1, 2], device=DEVICE), [one])
    with pytest.raises(RuntimeError):  # like torch's div_ on a tensor that overlaps itself
        TRITON.store_kv(
            buffer,
            buffer,
            torch.tensor([1, 2], device=DEVICE),
            _randn(2, 1, 16).expand(2, 2, 16),
            _randn(2, 2, 16),
            0.5,
            0.5,
            torch.float8_e4m3fn,
            torch.uint8,
        )
    rows = _randn(5, 2, 16)
    _both(lambda e, b: e.scatter(b, torch.tensor([3, 5, 3, -1, 5], device=DEVICE), rows), buffer)


def test_a_scaled_fp8_row_broadcast_over_slots_is_divided_once_as_torch_does():
    """A narrowed SWA write of the bundled era: one (divided, cast) row lands in every slot, and
    the caller's row is divided in place once, as SGLang's cache_k.div_(k_scale) leaves it."""
    loc = torch.tensor([1, 4, 6], device=DEVICE)

    def write(engine, k_buffer, v_buffer, k, v):
        engine.store_kv(k_buffer, v_buffer, loc, k, v, 0.5, 0.25, torch.float8_e4m3fn, torch.uint8)

    buffers = [torch.zeros(8, 2, 16, dtype=torch.uint8, device=DEVICE) for _ in range(2)]
    _both(write, *buffers, _randn(1, 2, 16), _randn(1, 2, 16))
