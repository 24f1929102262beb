"""The judge writes a whole forward at once (pools/judge/token_writes.py); the per-token loop it
replaced (tests/helpers/token_loop_judge.py) is its oracle here. Over drawn forwards, both give
byte-identical buffers and the same exception, type and message: duplicate slots (the last
writer wins), slot 0, negative and out-of-range slots, one row broadcast over many slots, row
counts torch refuses, rows that do not fit or whose itemsize differs, the paged placements (HND,
aiter's key and value), and MLA's columns with a skipped reserved slot.

CI draws PROOF_EXAMPLES forwards; `KVH_PROOF_EXAMPLES=10000 pytest tests/test_tensor_judge.py`
draws more (the issue's proof ran 10,000, docs/bench.md)."""

from __future__ import annotations

import importlib
import inspect
import os
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.plan.candidate import Candidate
from harness.run.execute import execute
from pools.judge import judge_module
from pools.judge import token_writes as tensor
from scenarios.model import POOL_KINDS
from tests.helpers import token_loop_judge as loop
from tests.test_judge import assert_same_execution, cells

PROOF_EXAMPLES = int(os.environ.get("KVH_PROOF_EXAMPLES", "400"))
PROOF = settings(
    max_examples=PROOF_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BUFFER_DTYPES = (np.uint8, np.uint16, np.float32)
ROW_DTYPES = (np.uint8, np.uint16, np.int16, np.float16, np.int32)


def outcome(write: Callable[[np.ndarray], None], start: np.ndarray) -> tuple:
    """(the exception's type name and message, or None; the buffer's bytes after the write)."""
    buffer = start.copy()
    try:
        write(buffer)
        raised = None
    except Exception as error:  # the judge's exceptions are its verdicts: compared as data
        raised = (type(error).__name__, str(error))
    return raised, buffer.tobytes()


def filled(draw, shape: tuple, dtype) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    raw = np.random.default_rng(seed).integers(
        0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize
    )
    return raw.astype(np.uint8).view(dtype).reshape(shape)


@st.composite
def value_shape(draw, row: tuple) -> tuple:
    """A value row's shape for a slot row of shape `row`: the same, with leading 1s, a
    broadcastable one (1s and dropped leading dims), or one that does not fit."""
    choice = draw(st.sampled_from(["same", "leading", "broadcast", "misfit"]))
    if choice == "same":
        return row
    if choice == "leading":
        return (1,) * draw(st.integers(1, 2)) + row
    if choice == "broadcast":
        kept = row[draw(st.integers(0, len(row))) :]
        return tuple(draw(st.sampled_from([1, size])) for size in kept)
    return tuple(size + draw(st.integers(1, 2)) for size in row) or (2,)


@st.composite
def loc_and_rows(draw, slots: int, row: tuple, paged: bool) -> tuple:
    """(loc, rows): slots with duplicates, slot 0 and, for a token-major buffer, negatives and
    out-of-range ones; rows one per slot, one for all, or a count torch refuses."""
    low, high = (-slots - 2, slots + 2) if not paged else (-2, slots + 2)
    tokens = draw(st.integers(0, 12))
    pool = draw(st.lists(st.integers(0, max(slots - 1, 0)), min_size=1, max_size=3))
    values = draw(
        st.lists(st.one_of(st.sampled_from(pool), st.integers(low, high)), min_size=tokens,
                 max_size=tokens)
    )  # fmt: skip
    index_dtype = draw(st.sampled_from([torch.int64, torch.int32]))
    loc = torch.tensor(values, dtype=index_dtype)
    count = draw(st.sampled_from([tokens, tokens, tokens, 1, tokens + 1]))
    row_dtype = draw(st.sampled_from(ROW_DTYPES))
    return loc, filled(draw, (count, *draw(value_shape(row))), row_dtype)


@st.composite
def token_major(draw) -> tuple:
    slots = draw(st.integers(1, 9))
    row = tuple(draw(st.lists(st.integers(1, 4), max_size=2)))
    buffer = filled(draw, (slots, *row), draw(st.sampled_from(BUFFER_DTYPES)))
    loc, rows = draw(loc_and_rows(slots, row, paged=False))
    return buffer, loc, rows


@given(token_major())
@PROOF
def test_token_major_writes_are_the_loop_s(case):
    buffer, loc, rows = case
    want = outcome(lambda b: loop.write_rows(b, loc, rows), buffer)
    assert outcome(lambda b: tensor.write_rows(b, loc, rows), buffer) == want


PAGED = {
    # name: (buffer shape from (pages, heads, page_size, dim, x), slot row shape)
    "hnd": (lambda p, h, s, d, x: (p, h, s, d), lambda p, h, s, d, x: (h, d)),
    "aiter_key": (lambda p, h, s, d, x: (p, h, d, s, x), lambda p, h, s, d, x: (h, d, x)),
    "aiter_value": (lambda p, h, s, d, x: (p, h, s, d, x), lambda p, h, s, d, x: (h, d)),
}


@st.composite
def paged(draw) -> tuple:
    name = draw(st.sampled_from(sorted(PAGED)))
    dims = tuple(draw(st.integers(1, 3)) for _ in range(5))
    buffer_shape, row_shape = (shape(*dims) for shape in PAGED[name])
    buffer = filled(draw, buffer_shape, draw(st.sampled_from(BUFFER_DTYPES)))
    total = getattr(loop, f"{name}_slots")(buffer)
    loc, rows = draw(loc_and_rows(total, row_shape, paged=True))
    return name, buffer, loc, rows


@given(paged())
@PROOF
def test_paged_writes_are_the_loop_s(case):
    name, buffer, loc, rows = case
    place = f"{name}_row"

    def write(module) -> Callable[[np.ndarray], None]:
        return lambda b: module.write_paged(
            b, loc, rows, getattr(module, place), getattr(module, f"{name}_slots")
        )

    assert outcome(write(tensor), buffer) == outcome(write(loop), buffer)


@st.composite
def columns(draw) -> tuple:
    slots = draw(st.integers(1, 9))
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    widths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    buffer = filled(draw, (slots, *lead, sum(widths) + draw(st.integers(0, 2))),
                    draw(st.sampled_from(BUFFER_DTYPES)))  # fmt: skip
    loc, _ = draw(loc_and_rows(slots, lead, paged=False))
    parts: list[Optional[np.ndarray]] = []
    for width in widths:
        if draw(st.booleans()) and width:
            parts.append(None)
            continue
        count = draw(st.sampled_from([len(loc), len(loc), len(loc), 1]))
        shape = draw(value_shape((*lead, width)))
        parts.append(filled(draw, (count, *shape), draw(st.sampled_from(ROW_DTYPES))))
    skipped = draw(st.sampled_from([None, 0]))
    return buffer, loc, parts, skipped, draw(st.booleans())


@given(columns())
@PROOF
def test_mla_columns_are_the_loop_s(case):
    buffer, loc, parts, skipped, rows_checked = case

    def write(module) -> Callable[[np.ndarray], None]:
        return lambda b: module.write_columns(b, loc, parts, skipped, rows_checked)

    assert outcome(write(tensor), buffer) == outcome(write(loop), buffer)


# ----- whole pools: every kind, dtype cast and scale rule ----------------------------------------

JUDGE_MODULES = ("token_major", "layouts", "fp4_pools", "minimax_sparse", "qsa")


@contextmanager
def judge_writing_token_by_token() -> Iterator[None]:
    """The judge's pools with the per-token loop in place of every tensor write they import."""
    replaced = []
    for name in JUDGE_MODULES:
        module = importlib.import_module(f"pools.judge.{name}")
        for attribute, value in vars(tensor).items():
            if inspect.isfunction(value) and getattr(module, attribute, None) is value:
                replaced.append((module, attribute, value))
                setattr(module, attribute, getattr(loop, attribute))
    assert replaced, "the judge imports none of the tensor writes: nothing was proved"
    try:
        yield
    finally:
        for module, attribute, value in replaced:
            setattr(module, attribute, value)


@pytest.mark.parametrize("pool", POOL_KINDS)
def test_every_builtin_cell_of_the_judge_writes_as_the_loop_did(pool):
    """Every builtin scenario, backend, mode and era the registry runs on `pool` (test_judge's
    cells: every dtype, so every cast and scale rule), through both judges."""
    judged = 0
    for scenario, backend, mode, era in cells(pool):
        candidate = Candidate("judge", judge_module(era), era, "judge", "cpu", backend, mode)
        got = execute(candidate, scenario)
        with judge_writing_token_by_token():
            want = execute(candidate, scenario)
        cell = f"{pool}/{scenario.geometry.dtype}/{scenario.name}/{backend}:{mode}/{era}"
        assert_same_execution(want, got, cell)
        judged += 1
    assert judged > 0
