"""A pool's life cycle as a Hypothesis state machine: allocate and write (extend, decode, two
micro-batches slicing one loc storage), free, slide SWA windows, remap between forwards (in place
or through register_mapping), and reuse a loc storage across forwards.

After every step the scenario so far (every forward since the pool was built) is checked by
`check`, which runs it through the baseline and the candidates; the first failing
scenario is kept on the machine class, so a caller can save it as a repro after shrinking.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from scenarios.lifecycle import PoolLife, View
from scenarios.model import Scenario
from scenarios.strategies.geometry import geometries
from scenarios.strategies.scenario import page_picks

MAX_TOKENS = 24


def lifecycle_machine(
    pool: str,
    dtype: str,
    check: Callable[[Scenario], Any],
    failed: Callable[[Any], bool],
    pool_bytes: int = 2**20,
) -> type:
    class PoolLifecycle(RuleBasedStateMachine):
        failure: Optional[tuple[Scenario, Any]] = None

        @initialize(geometry=geometries(pool, dtype, pool_bytes), seed=st.integers(0, 2**16))
        def build(self, geometry, seed: int) -> None:
            self.life, self.seed, self.next_rid = PoolLife(geometry), seed, 0
            self.in_place, self.storage = True, None

        def _new_request(self, tokens: int, picks: list[int], window: int) -> list[int]:
            self.next_rid += 1
            return self.life.grow(self.next_rid, tokens, picks, window)

        def _write(
            self, loc: list[int], padding: int = 0, reuse: bool = False, offset: int = 0
        ) -> None:
            if not loc:
                return
            if reuse and self.storage is None:
                self.storage = self.life.new_storage()
            view = View(self.storage, offset) if reuse else View()
            self.life.forward(loc, padding=padding, view=view, in_place=self.in_place)

        @rule(
            tokens=st.integers(1, MAX_TOKENS),
            picks=page_picks(),
            window=st.integers(0, 2 * MAX_TOKENS),
            padding=st.integers(0, 3),
            reuse=st.booleans(),
            offset=st.integers(0, 4),
        )
        def extend(self, tokens, picks, window, padding, reuse, offset) -> None:
            self._write(self._new_request(tokens, picks, window), padding, reuse, offset)

        @precondition(lambda self: self.life.requests)
        @rule(data=st.data(), window=st.integers(0, 2 * MAX_TOKENS), reuse=st.booleans())
        def decode(self, data, window, reuse) -> None:
            rids = data.draw(
                st.lists(st.sampled_from(sorted(self.life.requests)), min_size=1, unique=True)
            )
            loc = [slot for rid in rids for slot in self.life.grow(rid, 1, [], window)]
            self._write(loc, reuse=reuse)

        @rule(
            half=st.integers(1, MAX_TOKENS // 2),
            picks=page_picks(),
            window=st.integers(0, 2 * MAX_TOKENS),
            offset=st.integers(0, 4),
        )
        def micro_batches(self, half, picks, window, offset) -> None:
            """One batch as two same-length micro-batches slicing one loc storage."""
            loc = self._new_request(2 * half, picks, window)
            if len(loc) == 2 * half:
                storage = self.life.new_storage()
                self.life.forward(loc[:half], view=View(storage, offset), in_place=self.in_place)
                self.life.forward(loc[half:], view=View(storage, offset + half))

        @precondition(lambda self: self.life.requests)
        @rule(data=st.data())
        def free(self, data) -> None:
            self.life.free(data.draw(st.sampled_from(sorted(self.life.requests))))

        @precondition(lambda self: self.life.requests and self.life.geometry.kind.swa)
        @rule(data=st.data())
        def evict_window(self, data) -> None:
            rid = data.draw(st.sampled_from(sorted(self.life.requests)))
            self.life.evict(rid, data.draw(st.integers(0, self.life.requests[rid].length)))

        @rule(in_place=st.booleans())
        def remap_mode(self, in_place) -> None:
            """How the next mapping change reaches the pool: in place, or register_mapping(new)."""
            self.in_place = in_place

        @invariant()
        def agrees_with_the_reference(self) -> None:
            if not getattr(self, "life", None) or not self.life.forwards:
                return
            scenario = self.life.scenario(self.seed, f"lifecycle-{pool}-{dtype}")
            outcome = check(scenario)
            if failed(outcome):
                type(self).failure = (scenario, outcome)
                raise AssertionError(f"{len(scenario.forwards)} forwards: the candidates disagree")

    PoolLifecycle.__name__ = f"PoolLifecycle_{pool}_{dtype}"
    return PoolLifecycle
