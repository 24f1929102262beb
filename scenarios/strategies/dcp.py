"""A decode-context-parallel rank's scenarios: any scenario of a pool kind that can be one
(PoolKind.dcp_rank), made rank `dcp_rank` of `dcp_size` (the exploring run draws these for a call
site that writes a DCP rank's share, backends/triton_dcp.py).

Each forward's tokens get positions in their requests, which decide the tokens the rank keeps
(position % dcp_size == dcp_rank), and each slot becomes the global id dcp_size * slot +
position % dcp_size, whose // dcp_size is the rank's row, as a DCP allocator interleaves them.
A narrowed or cross-attention forward or a draft commit carries no positions: the backend's
write then masks nothing. Shrinks toward two ranks, rank 0 and every position 0.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from scenarios.model import Forward, Scenario

DCP_SIZES = (2, 4)
MAX_POSITION = 2**12


@st.composite
def dcp_ranks(draw: st.DrawFn, scenarios: st.SearchStrategy[Scenario]) -> Scenario:
    scenario = draw(scenarios)
    g = scenario.geometry
    if not g.kind.dcp_rank:
        return scenario
    size = draw(st.sampled_from(DCP_SIZES))
    rank = draw(st.integers(0, size - 1))
    forwards = [_ranked(draw, forward, size) for forward in scenario.forwards]
    ranked = replace(g, dcp_size=size, dcp_rank=rank, v_head_dim=None)
    return replace(scenario, geometry=ranked, forwards=forwards)


def _ranked(draw: st.DrawFn, forward: Forward, size: int) -> Forward:
    masked = forward.narrow is None and not forward.cross_layers and forward.commit_lens is None
    if not masked:
        encoder = forward.encoder_loc and [size * slot for slot in forward.encoder_loc]
        return replace(forward, loc=[size * slot for slot in forward.loc], encoder_loc=encoder)
    count = len(forward.loc)
    positions = draw(st.lists(st.integers(0, MAX_POSITION), min_size=count, max_size=count))
    loc = [size * slot + position % size for slot, position in zip(forward.loc, positions)]
    return replace(forward, loc=loc, positions=positions)
