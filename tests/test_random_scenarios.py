"""`kvh run --examples N`'s seeded scenarios (scenarios/random_defaults.py random_scenarios): N of
them for every kind and dtype, each one its pool can hold. A DSA or DeepSeek V4 kind's 64-token
pages once met a size drawn for one-slot pages, and the draw raised (exit 3 at the first DSA kind);
aiter's 5-D and QSA pools were handed one-slot pages they refuse."""

from __future__ import annotations

import pytest

from pools.dtypes import DTYPES
from scenarios.model import POOL_KINDS
from scenarios.random_defaults import random_scenarios
from scenarios.serialize import validate


@pytest.mark.parametrize("pool", POOL_KINDS)
def test_every_kind_gets_as_many_random_scenarios_as_asked_each_one_its_pool_holds(pool):
    for dtype in DTYPES:
        drawn = random_scenarios(pool, dtype, seed=0, count=20)
        assert len(drawn) == 20, (pool, dtype)
        for scenario in drawn:
            validate(scenario)  # raises ScenarioError naming what the pool refuses
