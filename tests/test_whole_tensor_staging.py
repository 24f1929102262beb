"""Staging a check in whole tensors (issue 60 item 3) gives what the per-token rules give: the
decoy slot a loc storage is filled with, and a QSA forward's indexer plan, over drawn locs with
the padding slot, negative slots and slots past the pool."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios.materialize import decoy_slot
from scenarios.slots import qsa_compressed_slot, qsa_plan, qsa_ring_slot

SLOTS = st.integers(min_value=-5, max_value=70)
LOCS = st.lists(SLOTS, max_size=40)


def decoy_slot_by_scan(size: int, page_size: int, locs: list[list[int]]) -> int:
    """The rule as first written: the highest slot, scanning down from the pool's last row to 1,
    that no forward writes."""
    used = {slot for loc in locs for slot in loc}
    return next((slot for slot in range(size + page_size - 1, 0, -1) if slot not in used), 0)


@settings(max_examples=400, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=64),
    page_size=st.sampled_from([1, 2, 16]),
    locs=st.lists(LOCS, min_size=1, max_size=3),
    encoder=st.one_of(st.none(), LOCS),
)
def test_the_decoy_slot_is_the_highest_slot_no_forward_writes(size, page_size, locs, encoder):
    forwards = [
        SimpleNamespace(loc=loc, encoder_loc=encoder if index == 0 else None)
        for index, loc in enumerate(locs)
    ]
    scenario = SimpleNamespace(geometry=SimpleNamespace(size=size, page_size=page_size),
                               forwards=forwards)  # fmt: skip
    written = locs + ([encoder] if encoder else [])
    assert decoy_slot(scenario) == decoy_slot_by_scan(size, page_size, written)


@settings(max_examples=400, deadline=None)
@given(loc=LOCS, cut=st.integers(min_value=0, max_value=40), loc_dtype=st.sampled_from(
    [torch.int32, torch.int64]))  # fmt: skip
def test_a_qsa_plan_is_each_token_s_ring_row_and_each_group_end_s_compressed_row(
    loc, cut, loc_dtype
):
    forward = SimpleNamespace(loc=loc, tokens=min(cut, len(loc)))
    slots = loc[: forward.tokens]
    ends = [token for token, slot in enumerate(slots) if qsa_compressed_slot(slot) is not None]
    plan = qsa_plan(forward, loc_dtype, "cpu")
    assert plan["qsa_ring_slots"].tolist() == [qsa_ring_slot(t, s) for t, s in enumerate(slots)]
    assert plan["qsa_positions"].tolist() == slots
    assert plan["qsa_group_rows"].tolist() == ends
    assert plan["qsa_write_locs"].tolist() == [qsa_compressed_slot(slots[t]) for t in ends]
    assert plan["qsa_write_locs"].dtype == loc_dtype
    assert all(plan[name].dtype == torch.int64 for name in
               ("qsa_ring_slots", "qsa_positions", "qsa_group_rows"))  # fmt: skip
