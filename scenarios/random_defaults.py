"""The extra seeded scenarios of `kvh run --examples N` without a profile: random token counts,
page sizes, narrowing and scales, each one the kind's pool can hold."""

from __future__ import annotations

import random

from scenarios.allocator import allocate
from scenarios.defaults import geometry, make_scenario
from scenarios.model import Forward, Scale, Scenario


def _random_scale(rng: random.Random) -> Scale:
    return Scale(
        rng.choice(("none", "float", "tensor", "param")), rng.choice((0.25, 0.5, 2.0, 3.0))
    )


# Draws of one random scenario before it is given up on: a kind whose pool refuses a drawn page
# size (aiter's 5-D words, QSA's compress ratio refuse one-slot pages) draws again.
RANDOM_ATTEMPTS = 8


def random_scenarios(pool: str, dtype: str, seed: int, count: int) -> list[Scenario]:
    """`count` extra seeded scenarios: random token counts, page sizes, narrowing and scales,
    each one the kind's pool can hold (scenarios/serialize.validate): one it refuses is drawn
    again, so a kind that holds every draw gets the same scenarios as before that rule."""
    from scenarios.serialize import ScenarioError, validate  # serialize reads this module

    rng = random.Random(f"{seed}:{pool}:{dtype}:random")
    scenarios = []
    for index in range(count):
        for _ in range(RANDOM_ATTEMPTS):
            scenario = _random_scenario(rng, pool, dtype, seed, index)
            try:
                validate(scenario)
            except ScenarioError:
                continue
            scenarios.append(scenario)
            break
    return scenarios


def _random_scenario(rng: random.Random, pool: str, dtype: str, seed: int, index: int) -> Scenario:
    page_size = rng.choice((1, 16, 64))
    g = geometry(pool, dtype, page_size=page_size, size=page_size * rng.randint(4, 12))
    forwards = []
    for _ in range(rng.randint(1, 3)):
        tokens = rng.randint(1, min(48, g.size))
        loc = allocate(rng, g.size, g.page_size, tokens)
        padding = rng.choice((0, 0, 3))
        forwards.append(Forward(loc + [0] * padding, narrow=tokens if padding else None))
    k_scale, v_scale = (
        _random_scale(rng),
        _random_scale(rng),
    )  # independent, as layers have them
    return make_scenario(
        rng,
        g,
        forwards,
        f"random-{index}",
        seed * 7919 + index,
        input_dtype=rng.choice((None, "fp32")),
        k_scale=k_scale,
        v_scale=v_scale,
        loc_dtype=rng.choice(("int32", "int64")),
    )
