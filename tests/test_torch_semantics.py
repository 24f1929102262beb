"""Row counts and slot ids as torch's `buffer[loc] = rows` takes them, pinned against the
installed SGLang: its pools write with plain indexing, so the judge and the builtin pools must
do what that indexing does, neither stricter nor looser (#29460's narrowed SWA write broadcasts
one token over every padded SWA slot; it raises only for 2 or more rows).

Each case runs through SGLang's own pool, the judge's pool of the bundled era and each builtin
CPU engine's pool, and compares what happened: the exception kind (oracles.error_kind, which
counts torch's "shape mismatch" RuntimeError as the IndexError the engines raise) or the bytes
of every buffer.
"""

from __future__ import annotations

import types
from typing import Callable, Optional

import pytest
import torch

from harness.compare.oracles import error_kind
from harness.compare.snapshot import Execution
from harness.sut.load.sglang_loader import INSTALL_HINT, SutLoadError, load_sglang
from pools.builtin.sut import builtin_module
from pools.judge import judge_module


def _load() -> tuple[Optional[types.SimpleNamespace], str]:
    try:
        return load_sglang(), ""
    except SutLoadError as error:
        return None, str(error)


SGL, LOAD_ERROR = _load()
needs_sglang = pytest.mark.skipif(
    SGL is None, reason=f"sglang did not load: {LOAD_ERROR or INSTALL_HINT}"
)

HEADS, DIM, LORA, ROPE, SIZE = 2, 4, 4, 2, 64
DTYPE = torch.bfloat16


def _layer() -> types.SimpleNamespace:
    return types.SimpleNamespace(layer_id=0, is_cross_attention=False, k_scale=None, v_scale=None)


def _rows(count: int, width: tuple[int, ...]) -> torch.Tensor:
    # Distinct per row, so a row written to the wrong slot shows in the bytes.
    return (
        (torch.arange(count * int(torch.tensor(width).prod())) + 1).reshape(count, *width).to(DTYPE)
    )


def _mha(module) -> object:
    return module.MHATokenToKVPool(
        size=SIZE, page_size=1, dtype=DTYPE, head_num=HEADS, head_dim=DIM, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip


def _mla(module) -> object:
    return module.MLATokenToKVPool(
        size=SIZE, page_size=1, dtype=DTYPE, kv_lora_rank=LORA, qk_rope_head_dim=ROPE,
        layer_num=1, device="cpu", enable_memory_saver=False,
    )  # fmt: skip


def _buffers(pool) -> list[torch.Tensor]:
    if hasattr(pool, "kv_lora_rank"):
        return [pool.get_key_buffer(0)]
    return [pool.get_key_buffer(0), pool.get_value_buffer(0)]


def _mha_write(pool, loc: torch.Tensor, rows: int) -> None:
    pool.set_kv_buffer(_layer(), loc, _rows(rows, (HEADS, DIM)), _rows(rows, (HEADS, DIM)) * 2)


def _mla_rows_write(pool, loc: torch.Tensor, rows: int) -> None:
    k = _rows(rows, (1, LORA + ROPE))
    pool.set_kv_buffer(_layer(), loc, k, k)


def _mla_door_write(pool, loc: torch.Tensor, rows: int) -> None:
    pool.set_mla_kv_buffer(_layer(), loc, _rows(rows, (1, LORA)), _rows(rows, (1, ROPE)) * 3)


DOOR_WRITES: dict[str, tuple[Callable, Callable]] = {
    "mha.set_kv_buffer": (_mha, _mha_write),
    "mla.set_kv_buffer": (_mla, _mla_rows_write),
    "mla.set_mla_kv_buffer": (_mla, _mla_door_write),
}

SIXTEEN = torch.arange(1, 17)
CASES = {
    "one row over 16 slots": (SIXTEEN, 1),
    "three rows for 16 slots": (SIXTEEN, 3),
    "no rows for 16 slots": (SIXTEEN, 0),
    "one row, empty loc": (torch.tensor([], dtype=torch.int64), 1),
    "two rows, empty loc": (torch.tensor([], dtype=torch.int64), 2),
    "-1 and a slot": (torch.tensor([-1, 5]), 2),
    "a slot twice": (torch.tensor([5, 5]), 2),
}

# Where the judge knowingly differs in the exception's class only, with why: both must raise.
RAISES_OTHERWISE = {
    ("mla.set_mla_kv_buffer", "no rows for 16 slots"): "0.5.23's CPU path reshapes before its "
    "mask and raises RuntimeError ('cannot reshape tensor of 0 elements'); no scenario keeps 0 "
    "rows (a narrowed forward keeps at least one), so the judge raises its IndexError",
}


def _outcome(make: Callable, write: Callable, module, loc: torch.Tensor, rows: int):
    """("raised", its kind) or ("wrote", every buffer's bytes)."""
    pool = make(module)
    try:
        write(pool, loc.clone(), rows)
    except Exception as error:  # the kind is what is compared
        return "raised", error_kind(Execution(error=f"{type(error).__name__}: {error}"))
    return "wrote", [buffer.view(torch.uint8).clone() for buffer in _buffers(pool)]


def _same(left, right) -> bool:
    if left[0] != right[0]:
        return False
    if left[0] == "raised":
        return left[1] == right[1]
    return all(torch.equal(a, b) for a, b in zip(left[1], right[1]))


def _subjects() -> dict[str, object]:
    # The installed release's era: its MLA door's row mask is what the judge models there (the
    # older eras' door is a GPU kernel, and a count that differs is undefined there).
    return {
        "judge": judge_module("current"),
        "builtin:reference": builtin_module("current", "reference"),
        "builtin:torch": builtin_module("current", "torch"),
    }


@needs_sglang
@pytest.mark.sglang
@pytest.mark.parametrize("door", DOOR_WRITES)
@pytest.mark.parametrize("case", CASES)
def test_judge_and_builtin_pools_take_rows_as_sglang_does(door: str, case: str):
    make, write = DOOR_WRITES[door]
    loc, rows = CASES[case]
    want = _outcome(make, write, SGL, loc, rows)
    for name, module in _subjects().items():
        got = _outcome(make, write, module, loc, rows)
        if (door, case) in RAISES_OTHERWISE:
            assert want[0] == got[0] == "raised", RAISES_OTHERWISE[door, case]
            continue
        assert _same(want, got), f"{name} on {door}, {case}: {got} where sglang {want[0]}"


@needs_sglang
@pytest.mark.sglang
def test_sglang_broadcasts_one_row_over_every_slot_and_raises_for_three():
    """The fact the narrowed-SWA divergences rest on, read from the release itself."""
    broadcast = _outcome(_mha, _mha_write, SGL, SIXTEEN, 1)
    assert broadcast[0] == "wrote"
    keys = broadcast[1][0].view(DTYPE)
    assert torch.equal(keys[1:17], _rows(1, (HEADS, DIM)).expand(16, HEADS, DIM))
    assert _outcome(_mha, _mha_write, SGL, SIXTEEN, 3) == ("raised", "IndexError")
    # The MLA nope ++ rope door selects rows with a mask: one row raises too.
    assert _outcome(_mla, _mla_door_write, SGL, SIXTEEN, 1) == ("raised", "IndexError")
