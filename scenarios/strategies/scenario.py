"""Whole scenarios: a pool's life over one to three forwards, drawn for one (pool kind, dtype).

Each forward is a batch of requests (new ones with a cached prefix, or continuing ones: extend
and decode), padded to slot 0 and possibly narrowed, its loc a fresh tensor, a view at an offset
into a storage, the same storage as the forward before (a static graph buffer), or split into two
micro-batches that slice one storage. Between forwards requests are freed or their SWA window
slides, and the mapping changes reach the pool in place or through register_mapping.
Everything shrinks toward one forward of one token on the first free page.
"""

from __future__ import annotations

from hypothesis import strategies as st

from scenarios.lifecycle import PoolLife, View, split_spans
from scenarios.model import FULL_LOC_KINDS, Scenario, divides_inputs
from scenarios.strategies.built_once import integer_or_just, none_or_integer, sampled
from scenarios.strategies.data import data_fields
from scenarios.strategies.geometry import POOL_BYTES, geometries

MAX_FORWARDS = 3
MAX_REQUESTS = 3
MAX_EXTEND = 64
MAX_PREFIX = 80
MAX_PADDING = 7
MAX_OFFSET = 9
LAYOUTS = ("fresh", "view", "reuse", "micro")


# Positions in the free-page list, the first (page 1 of a fresh pool: slot 1 at page size 1) and
# the last (the pool's top slots) drawn as often as any other; shrinks to the first. At least one
# pick: an empty list takes the first pages, and was drawn so often that a cell's few examples at
# `ci` seldom wrote past 2^8 even in a 2^17-slot pool. Built once: Hypothesis validates every
# new strategy object, which cost more than the draw itself.
PAGE_PICKS = st.lists(
    st.one_of(st.just(0), st.just(-1), st.integers(0, 2**17)), min_size=1, max_size=4
)


def page_picks() -> st.SearchStrategy[list[int]]:
    return PAGE_PICKS


def token_counts(life: PoolLife, rid: int) -> st.SearchStrategy[int]:
    """A few tokens, or exactly as many as end the request on the last slot of a page (the page
    tail, often missed by an off-by-one); shrinks to one token."""
    length = life.requests[rid].length if rid in life.requests else 0
    to_page_tail = life.geometry.page_size - length % life.geometry.page_size
    return integer_or_just(1, MAX_EXTEND, to_page_tail)


@st.composite
def batch(draw: st.DrawFn, life: PoolLife, next_rid: int) -> list[int]:
    """One forward's real tokens: requests extended (or decoded) by a few tokens each."""
    loc: list[int] = []
    for index in range(draw(st.integers(1, MAX_REQUESTS))):
        live = sorted(life.requests)
        rid = draw(sampled((next_rid + index, *live)))
        if rid not in life.requests:
            prefix = draw(st.integers(0, MAX_PREFIX))  # a cached prefix: slots, not written now
            if prefix:
                life.grow(rid, prefix, draw(page_picks()), window=0)
        tokens = draw(token_counts(life, rid))
        window = draw(st.integers(0, MAX_PREFIX + MAX_EXTEND)) if life.geometry.kind.swa else 0
        loc += life.extend(rid, tokens, draw(page_picks()), window)
    return loc


@st.composite
def between_forwards(draw: st.DrawFn, life: PoolLife) -> None:
    """Free a request, or slide its SWA window, or neither."""
    if not life.requests:
        return
    actions = ("none", "free", "evict") if life.geometry.kind.swa else ("none", "free")
    action = draw(sampled(actions))
    rid = draw(sampled(tuple(sorted(life.requests))))
    if action == "free":
        life.free(rid)
    elif action == "evict":
        life.evict(rid, draw(st.integers(0, life.requests[rid].length)))


@st.composite
def record_forward(draw: st.DrawFn, life: PoolLife, loc: list[int]) -> None:
    g = life.geometry
    layout = draw(sampled(LAYOUTS))
    in_place = draw(st.booleans())
    requests = life.take_spans()
    if layout == "micro" and len(loc) > 1:
        # Two micro-batches of one batch, slicing one storage (two-batch overlap).
        split, offset, storage = len(loc) // 2, draw(st.integers(0, MAX_OFFSET)), life.new_storage()
        first, second = split_spans(requests, split)
        life.forward(loc[:split], view=View(storage, offset), in_place=in_place, requests=first)
        life.forward(loc[split:], view=View(storage, offset + split), requests=second)
        return
    previous = life.forwards[-1].loc_storage if life.forwards else None
    if layout == "reuse" and previous is not None:
        view = View(previous, draw(st.integers(0, MAX_OFFSET)))
    elif layout in ("view", "reuse"):
        view = View(life.new_storage(), draw(st.integers(0, MAX_OFFSET)))
    else:
        view = View()
    padding = draw(st.integers(0, MAX_PADDING))
    narrow = draw(none_or_integer(1, len(loc) + padding))
    cross: tuple[int, ...] = ()
    encoder = None
    if not (g.kind.latent or g.kind.sparse_index or g.kind.qsa or g.kind.nvfp4_page_rows) and draw(
        st.booleans()
    ):
        # Encoder-decoder models have no sliding-window layers: cross-attention is on full layers
        # (fa3 and others pair the encoder loc with the decoder's SWA loc, by design).
        cross = tuple(draw(st.lists(sampled(tuple(g.full_layer_ids)), min_size=1, unique=True)))
        encoder = life.grow(-1 - len(life.forwards), len(loc), draw(page_picks()), window=0)
        encoder += [0] * (len(loc) - len(encoder))  # a full pool leaves the rest padded
    life.forward(
        loc,
        padding=padding,
        narrow=narrow,
        view=view,
        in_place=in_place,
        encoder_loc=encoder,
        cross_layers=cross,
        requests=requests,
    )


@st.composite
def scenarios(
    draw: st.DrawFn,
    pool: str,
    dtype: str,
    special_values: bool = False,
    pool_bytes: int = POOL_BYTES,
) -> Scenario:
    life = PoolLife(draw(geometries(pool, dtype, pool_bytes)))
    for index in range(draw(st.integers(1, MAX_FORWARDS))):
        if index:
            draw(between_forwards(life))
        loc = draw(batch(life, next_rid=100 * index))
        if not loc:
            break
        draw(record_forward(life, loc))
    if not life.forwards:  # a pool too small for any token: write the sink only
        life.forward([0])
    fields = draw(data_fields(dtype, special_values))
    # A hybrid linear or unified SWA pool writes at full_loc by design: the skip
    # full-loc-by-design.
    fields["stale_full_loc"] = draw(st.booleans()) and pool not in FULL_LOC_KINDS
    # NaN padding only where no write divides it (measured at --profile ci and nightly).
    divided = divides_inputs(pool, fields["k_scale"], fields["v_scale"])
    fields["nan_padding"] = draw(st.booleans()) and not divided
    fields["unmarked_loc"] = draw(sampled((False, False, False, True)))
    return life.scenario(draw(st.integers(0, 2**32 - 1)), f"hypothesis-{pool}-{dtype}", **fields)
