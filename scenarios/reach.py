"""The top of the pool, pinned: one scenario per cell, checked at every profile before the
Hypothesis examples, so that every cell writes its pool's top slots whatever the examples draw.

Exploration draws large pools one time in three, and a cell's dozen `ci` examples may still
never write a slot past 2^17, slot 1 or the pool's last slot. This scenario writes all of them
in the largest pool the profile's byte budget holds: a fault that only shows at high slot ids
(an int32 offset, a 16-bit page index, a slot one row off) is caught in every pool kind. The
`ci` and `nightly` budgets hold a pool past 2^17 of every kind (a kind whose rows are fixed wider
has a floor of its own: its record's PoolKind.reach_floor_bytes); at `dev`'s 2 MiB the narrowest
fp32, FP4 and aiter 5-D rows do not fit, and it writes the top pages of the largest that does.
"""

from __future__ import annotations

from pools.kinds.landing import page_interleave_id
from scenarios.lifecycle import PoolLife
from scenarios.model import Scenario
from scenarios.strategies.geometry import large_geometry

REACH_SLOT = 2**17
# Slot ids where a narrow index type wraps, below REACH_SLOT: a 16-bit slot or a 15-bit offset.
REACH_MARKS = (2**15, 2**16)
REACH_PAGE_SIZE = 1  # slot 1 is only ever handed out at page size 1 (page 0 is the sink)
# One SWA page per request, so every token of the reach is written on SWA layers too.
REACH_SWA_PAGES = 2 + len(REACH_MARKS) + 2


def reach_scenario(pool: str, dtype: str, pool_bytes: int, seed: int) -> Scenario:
    """One forward of requests that are each a whole page: page 1 (slot 1 at page size 1), the
    pages at 2^15 and 2^16, the two pages either side of slot 2^17, and the last page (the
    pool's last slot, a page tail). On hybrid pools every token is in its request's window, so
    the SWA layer writes each of those pages' SWA pages too. Where the budget holds no pool past
    2^17, the two pages are its top ones but the last, and the marks it does not reach are left
    out. On a page-interleave pool it writes the ids whose rows on its rank those are."""
    g = large_geometry(
        pool,
        dtype,
        REACH_SLOT,
        REACH_PAGE_SIZE,
        pool_bytes,
        extra_pages=1,
        swa_pages=REACH_SWA_PAGES,
    )
    life = PoolLife(g)
    page, pages = g.page_size, g.size // g.page_size
    # The page that holds slot 2^17, or in a pool too small for it the last page but one.
    top = min(REACH_SLOT // page, pages - 1)
    marks = [mark // page for mark in REACH_MARKS if 1 < mark // page < top - 1]
    loc = life.extend(0, page, [0], window=page)
    # Pages 2.. are free, page q at position q - 2 less the pages below it taken already: the
    # wanted pages are taken in ascending order, so that is their index among them.
    for taken, mark in enumerate(marks):
        loc += life.extend(1 + taken, page, [mark - 2 - taken], window=page)
    below = max(0, top - 3 - len(marks))  # the pick repeats as the list closes up
    loc += life.extend(1 + len(marks), 2 * page, [below, below], window=2 * page)
    loc += life.extend(2 + len(marks), page, [-1], window=page)
    if g.kind.page_interleave:  # the pages' ids on this rank: its rows are the ones pinned
        loc = [page_interleave_id(g, row) for row in loc]
    life.forward(loc, requests=life.take_spans())
    return life.scenario(seed, f"reach-2^17-{pool}-{dtype}")
