"""The judge's per-token write loop, as it was before the judge wrote whole tensors: the oracle
of tests/test_tensor_judge.py, which shows pools/judge/token_writes.py writes the same bytes and
raises the same exceptions.

One token at a time, in token order, so the last writer of a slot wins. Slots index like Python:
a negative slot counts from the end of a token-major buffer and an out-of-range one raises
IndexError (what `buffer[slot] = row` does in torch). A value row is broadcast to its slot's row
the way torch's indexed assignment broadcasts (leading size-1 dims dropped); a row that does not
fit raises RuntimeError, as torch does. Paged layouts (HND, aiter 5-D) check every slot against
[0, slots) before writing any. Kept as it was so that it shares no code with what it judges.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import torch

Place = Callable[[np.ndarray, int], np.ndarray]  # (layer buffer, slot) -> the slot's row, a view


def assign(target: np.ndarray, value: np.ndarray) -> None:
    """target[...] = value with torch's broadcasting of an indexed assignment."""
    if value.shape == target.shape and value.dtype.itemsize == target.dtype.itemsize:
        target[...] = value.view(target.dtype)  # the common case: nothing to broadcast
        return
    while value.ndim > target.ndim and value.shape[0] == 1:
        value = value[0]
    if value.dtype.itemsize != target.dtype.itemsize:
        raise TypeError(f"a {value.dtype} row cannot be stored in a {target.dtype} buffer")
    try:
        target[...] = np.broadcast_to(value, target.shape).view(target.dtype)
    except ValueError:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
            f"broadcast to indexing result of shape {list(target.shape)}"
        ) from None


def token_row(buffer: np.ndarray, slot: int) -> np.ndarray:
    """Token-major: the slot is the buffer's row."""
    return buffer[slot, ...]


def row_of_token(slots: int, rows: np.ndarray) -> Callable[[int], np.ndarray]:
    """Token i's row of `rows` for `slots` slots, as torch's indexed assignment pairs them: row i,
    or row 0 for every token when there is one row; any other count raises."""
    if rows.shape[0] == slots:
        return lambda token: rows[token]
    if rows.shape[0] == 1:
        return lambda token: rows[0]
    raise IndexError(f"{slots} slots for {rows.shape[0]} rows")


def write_rows(
    buffer: np.ndarray, loc: torch.Tensor, rows: np.ndarray, place: Place = token_row
) -> None:
    """buffer[slot of token i] = rows[i] for every token i, in order (one row: every slot)."""
    row = row_of_token(loc.shape[0], rows)
    for token, slot in enumerate(loc.tolist()):
        assign(place(buffer, slot), row(token))


class UndefinedBehaviour(Exception):
    """The judge cannot say what the modelled door does with this input: no code that runs here
    establishes it (an era whose door is a GPU kernel that reads past its rows, say). A baseline
    that raises this leaves its check undefined: not judged, counted apart, never a finding."""


def write_columns(
    buffer: np.ndarray,
    loc: torch.Tensor,
    parts: Sequence[Optional[np.ndarray]],
    skipped_slot: Optional[int] = None,
    rows_checked: bool = True,
) -> None:
    """Each token's parts side by side along the last dim of its slot's row (MLA nope ++ rope);
    a missing or zero-wide part takes no columns. Every part has one row per slot: another count
    raises IndexError where the door checks it (`rows_checked`: 0.5.23's row mask), and is
    UndefinedBehaviour where it does not (the older eras' kernel reads row i for slot i). A token
    whose slot is `skipped_slot` (the reserved slot, where the store's policy skips it) writes
    nothing."""
    for part in parts:
        if part is not None and part.shape[-1] != 0 and part.shape[0] != loc.shape[0]:
            if not rows_checked:
                raise UndefinedBehaviour(
                    "a row count that differs from the slots, through an MLA door whose release "
                    "is a GPU kernel reading row i for slot i: what it writes is not established"
                )
            raise IndexError(f"{loc.shape[0]} slots for {part.shape[0]} rows")
    for token, slot in enumerate(loc.tolist()):
        if slot == skipped_slot:
            continue
        column = 0
        for part in parts:
            if part is None or part.shape[-1] == 0:
                continue
            width = part.shape[-1]
            assign(buffer[slot, ..., column : column + width], part[token])
            column += width


def check_paged_slots(loc: torch.Tensor, total: int) -> None:
    slots = loc.tolist()
    if any(slot < 0 or slot >= total for slot in slots):
        raise IndexError(f"slot out of range [0, {total}) for a paged layout")


# Paged placements. `buffer` is one layer's buffer; page_size is read from its shape.


def hnd_row(buffer: np.ndarray, slot: int) -> np.ndarray:
    """(pages, heads, page_size, dim): slot s is [s // page_size, :, s % page_size, :]."""
    page_size = buffer.shape[2]
    return buffer[slot // page_size, :, slot % page_size, :]


def hnd_slots(buffer: np.ndarray) -> int:
    return buffer.shape[0] * buffer.shape[2]


def aiter_key_row(buffer: np.ndarray, slot: int) -> np.ndarray:
    """(blocks, heads, dim // X, page_size, X): slot s is
    [s // page_size, :, :, s % page_size, :]."""
    page_size = buffer.shape[3]
    return buffer[slot // page_size, :, :, slot % page_size, :]


def aiter_key_slots(buffer: np.ndarray) -> int:
    return buffer.shape[0] * buffer.shape[3]


def aiter_value_row(buffer: np.ndarray, slot: int) -> np.ndarray:
    """(blocks, heads, page_size // X, dim, X): offset o = s % page_size is
    [.., o // X, :, o % X]."""
    x = buffer.shape[4]
    page_size = buffer.shape[2] * x
    offset = slot % page_size
    return buffer[slot // page_size, :, offset // x, :, offset % x]


def aiter_value_slots(buffer: np.ndarray) -> int:
    return buffer.shape[0] * buffer.shape[2] * buffer.shape[4]


def write_paged(
    buffer: np.ndarray,
    loc: torch.Tensor,
    rows: np.ndarray,
    place: Place,
    slots: Callable[[np.ndarray], int],
) -> None:
    row_of_token(loc.shape[0], rows)  # a count torch refuses raises before the slot check
    check_paged_slots(loc, slots(buffer))
    write_rows(buffer, loc, rows, place)
