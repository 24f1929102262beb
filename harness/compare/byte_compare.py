"""Comparing uint8 buffers a machine word at a time: the same answers as the byte-wise torch
ops, several times faster on the pools the oracles scan once per run (a 2^17-slot pool's
buffers are compared and canary-scanned for the baseline and every candidate)."""

from __future__ import annotations

from typing import Optional

import torch

from harness.compare.snapshot import CANARY

_WIDE = (torch.int64, torch.int32, torch.int16)


def _widest(rows: torch.Tensor) -> Optional[torch.dtype]:
    """The widest integer dtype a contiguous uint8 tensor can be viewed as, if any."""
    if rows.dtype != torch.uint8 or rows.numel() == 0 or not rows.is_contiguous():
        return None
    return next(
        (
            wide
            for wide in _WIDE
            if rows.shape[-1] % wide.itemsize == 0
            and rows.storage_offset() % wide.itemsize == 0
            # is_contiguous ignores the strides of size-1 dimensions; view(dtype) does not
            and all(stride % wide.itemsize == 0 for stride in rows.stride()[:-1])
        ),
        None,
    )


def bytes_equal(want: torch.Tensor, got: torch.Tensor) -> bool:
    """torch.equal, compared a machine word at a time where both allow: the same answer, about
    seven times faster on uint8 rows (a 2^17-slot pool's buffers are compared per candidate)."""
    wide = _widest(want)
    if want.shape == got.shape and wide is not None and _widest(got) == wide:
        return torch.equal(want.view(wide), got.view(wide))
    return torch.equal(want, got)


def buffers_equal(
    want: dict[str, torch.Tensor], got: dict[str, torch.Tensor], skip_sink: bool = False
) -> bool:
    """The same buffers, of the same shapes and bytes (`skip_sink`: on every row but slot 0, the
    padding sink, whose bytes depend on the writer)."""
    first = 1 if skip_sink else 0
    return want.keys() == got.keys() and all(
        want[name].shape == got[name].shape and bytes_equal(want[name][first:], got[name][first:])
        for name in want
    )


def off_canary(rows: torch.Tensor) -> torch.Tensor:
    """Per row of a (rows, bytes) uint8 buffer: does any byte differ from the canary? Compared
    a machine word at a time where the row width allows (eight times fewer comparisons)."""
    wide = _widest(rows) if rows.dim() == 2 else None
    if wide is not None:
        word = torch.full((wide.itemsize,), CANARY, dtype=torch.uint8).view(wide)
        return (rows.view(wide) != word).any(dim=1)
    return (rows != CANARY).any(dim=1)


def all_canary(buffer: torch.Tensor) -> bool:
    """Does every byte of `buffer` (any dtype and shape, contiguous) hold the canary? One
    vectorised comparison: the test that an idle pool holds nothing but the canary before it
    is lent again (harness/run/pool_cache.py)."""
    flat = buffer.reshape(-1).view(torch.uint8)
    if not flat.numel():
        return True
    return _equal_canary(flat.reshape(1, -1))


def _equal_canary(rows: torch.Tensor) -> bool:
    wide = _widest(rows)
    if wide is None:
        return not bool((rows != CANARY).any())
    word = torch.full((wide.itemsize,), CANARY, dtype=torch.uint8).view(wide)
    words = rows.view(wide)
    return torch.equal(words, word.expand_as(words))


# Past this many runs of unwritten rows, one masked pass is cheaper than a comparison per run.
MAX_RUNS = 64


def canary_outside(rows: torch.Tensor, written: list[int]) -> Optional[bool]:
    """Do the rows of a (rows, bytes) uint8 buffer that are neither the padding sink (row 0) nor
    in `written` (ascending) all hold the canary? One torch.equal per run of such rows; None
    where there are too many runs (the caller's masked pass decides)."""
    count = rows.shape[0]
    cuts = [0, *(slot for slot in written if 0 < slot < count)]
    runs = [(a + 1, b) for a, b in zip(cuts, [*cuts[1:], count]) if b > a + 1]
    if len(runs) > MAX_RUNS or rows.dim() != 2 or not rows.is_contiguous():
        return None
    return all(_equal_canary(rows[start:stop]) for start, stop in runs)


def written_rows_equal(want: torch.Tensor, got: torch.Tensor, index: torch.Tensor) -> bool:
    """Do the rows `index` (ascending slots) of two same-shaped (rows, bytes) buffers agree?
    Gathers those rows only; where a slot lies past the rows, the whole buffers but row 0 (the
    padding sink) are compared, as before."""
    if not index.numel():
        return True
    if int(index[-1]) >= want.shape[0]:
        return bytes_equal(want[1:], got[1:])
    return bytes_equal(want.index_select(0, index), got.index_select(0, index))
