"""Strategies built once per argument and drawn from many times. Hypothesis validates each new
strategy object on its first draw, which cost more than the draw itself: a scenario drawn
through strategies built afresh on every call spent most of its time validating them
(docs/bench.md, "Where one check's time goes"). `st.integers`, `st.booleans` and `st.lists` are
cached by Hypothesis; `st.sampled_from`, `st.just`, `st.one_of` and composites are not."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st


@lru_cache(maxsize=4096)
def sampled(values: tuple) -> st.SearchStrategy:
    """`st.sampled_from(values)`, one object per tuple (a request id's choices vary per draw, so
    the cache is bounded)."""
    return st.sampled_from(values)


@lru_cache(maxsize=None)
def integer_or_just(low: int, high: int, other: int) -> st.SearchStrategy:
    """`st.one_of(st.integers(low, high), st.just(other))`, one object per argument."""
    return st.one_of(st.integers(low, high), st.just(other))


@lru_cache(maxsize=None)
def none_or_integer(low: int, high: int) -> st.SearchStrategy:
    """`st.one_of(st.none(), st.integers(low, high))`, one object per argument."""
    return st.one_of(st.none(), st.integers(low, high))
