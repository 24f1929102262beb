"""A decode-context-parallel rank's scenarios: any scenario of a pool kind that can be one
(PoolKind.dcp_rank), made rank `dcp_rank` of `dcp_size` (the exploring run draws these for a call
site that writes a DCP rank's share, backends/triton_dcp.py and flashinfer_mla_dcp.py, and makes
its pinned reach scenario one).

Each forward's tokens get positions in their requests, which decide the tokens the rank keeps
(position % dcp_size == dcp_rank), and each slot becomes the global id dcp_size * slot +
position % dcp_size, whose // dcp_size is the rank's row, as a DCP allocator interleaves them.
A narrowed or cross-attention forward or a draft commit carries no positions: an MHA backend's
write then masks nothing, and an MLA rank's pool keeps the ids it owns (all rank 0's). Shrinks
toward two ranks, rank 0 and every position 0.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from hypothesis import strategies as st

from scenarios.model import Forward, Scenario

DCP_SIZES = (2, 4)
MAX_POSITION = 2**12


def as_dcp_rank(
    scenario: Scenario, size: int, rank: int, positions: Sequence[Optional[list[int]]]
) -> Scenario:
    """`scenario` on rank `rank` of `size`, its forwards' tokens at `positions` (one list a
    forward, None for a forward that carries none); a kind that cannot be a DCP rank's as it is."""
    if not scenario.geometry.kind.dcp_rank:
        return scenario
    forwards = [_ranked(f, size, p) for f, p in zip(scenario.forwards, positions)]
    ranked = replace(scenario.geometry, dcp_size=size, dcp_rank=rank, v_head_dim=None)
    return replace(scenario, geometry=ranked, forwards=forwards)


def positioned(forward: Forward) -> bool:
    """Whether the backend's write masks this forward's tokens by their positions."""
    return forward.narrow is None and not forward.cross_layers and forward.commit_lens is None


def pinned_dcp_rank(scenario: Scenario) -> Scenario:
    """A pinned scenario (the reach scenario) on rank 1 of 2, each token at its index in the
    forward as its position: every other token the rank's."""
    positions = [list(range(len(f.loc))) if positioned(f) else None for f in scenario.forwards]
    return as_dcp_rank(scenario, 2, 1, positions)


@st.composite
def dcp_ranks(draw: st.DrawFn, scenarios: st.SearchStrategy[Scenario]) -> Scenario:
    scenario = draw(scenarios)
    if not scenario.geometry.kind.dcp_rank:
        return scenario
    size = draw(st.sampled_from(DCP_SIZES))
    rank = draw(st.integers(0, size - 1))
    positions = [
        draw(st.lists(st.integers(0, MAX_POSITION), min_size=len(f.loc), max_size=len(f.loc)))
        if positioned(f)
        else None
        for f in scenario.forwards
    ]
    return as_dcp_rank(scenario, size, rank, positions)


def _ranked(forward: Forward, size: int, positions: Optional[list[int]]) -> Forward:
    if positions is None:
        encoder = forward.encoder_loc and [size * slot for slot in forward.encoder_loc]
        return replace(forward, loc=[size * slot for slot in forward.loc], encoder_loc=encoder)
    loc = [size * slot + position % size for slot, position in zip(forward.loc, positions)]
    return replace(forward, loc=loc, positions=positions)
