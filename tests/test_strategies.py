"""The strategies draw valid, JSON-round-trippable scenarios that reach the cases serving makes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, given, settings

from scenarios.model import POOL_KINDS
from scenarios.serialize import from_dict, to_dict, validate
from scenarios.strategies import scenarios
from scenarios.strategies.geometry import geometries

SEARCH = settings(
    max_examples=3000,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    deadline=None,
)


@pytest.mark.parametrize("pool, dtype", [(p, "bf16") for p in POOL_KINDS] + [("mha", "fp8_e4m3")])
def test_every_drawn_scenario_is_valid_and_round_trips_through_json(pool, dtype):
    @settings(
        max_examples=40,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios(pool, dtype, special_values=True))
    def check(scenario):
        validate(scenario)
        assert from_dict(to_dict(scenario)) == scenario
        for forward in scenario.forwards:
            real = [slot for slot in forward.loc if slot]
            assert len(real) == len(set(real)), "slot ids within a forward are unique"
            # The requests are the forward's new tokens, page 0 never one of them; a request
            # holds at least the tokens it writes.
            if forward.requests is not None:
                assert sum(span.extend for span in forward.requests) == len(real)
                assert all(1 <= span.extend <= span.length for span in forward.requests)

    check()


FEATURES = {
    "slots past 2^16": ("mha", lambda s: max(s.forwards[0].loc) >= 2**16),
    "the pool's last slot": (
        "mha",
        lambda s: s.geometry.size + s.geometry.page_size - 1 in s.forwards[0].loc,
    ),
    "int32 locs viewed at an offset": (
        "mha",
        lambda s: s.loc_dtype == "int32" and s.forwards[0].loc_offset > 0,
    ),
    "cross-attention from a fused qkv": (
        "mha",
        lambda s: s.fused_qkv and any(f.cross_layers for f in s.forwards),
    ),
    "same-length micro-batches of one storage": (
        "swa_mha",
        lambda s: (
            len(s.forwards) > 1
            and (s.forwards[0].loc_storage == s.forwards[1].loc_storage is not None)
            and len(s.forwards[0].loc) == len(s.forwards[1].loc)
        ),
    ),
    "an in-place remap between forwards": (
        "swa_mha",
        lambda s: any(f.remap and f.remap.in_place for f in s.forwards),
    ),
    "a register_mapping remap": (
        "swa_mha",
        lambda s: any(f.remap and not f.remap.in_place for f in s.forwards),
    ),
    # What a CP rank's release cuts request by request: every request of 2N tokens or more.
    "a batch of requests a CP strategy takes": (
        "mha",
        lambda s: any(
            len(f.written_requests() or ()) > 1
            and all(span.extend >= 4 for span in f.written_requests())
            for f in s.forwards
        ),
    ),
    "a narrowed SWA write": (
        "swa_mha",
        lambda s: any(f.narrow is not None and f.narrow < len(f.loc) for f in s.forwards),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["mha", "swa_mha"])
def test_strategies_reach_the_cases_serving_makes(pool):
    wanted = {name: condition for name, (kind, condition) in FEATURES.items() if kind == pool}
    seen = set()

    @settings(SEARCH, max_examples=400)
    @given(scenarios(pool, "bf16", pool_bytes=40 * 2**20))
    def survey(scenario):
        seen.update(name for name, condition in wanted.items() if condition(scenario))

    survey()
    assert seen == set(wanted), f"never drawn: {sorted(set(wanted) - seen)}"


@pytest.mark.parametrize(
    "what, condition",
    [
        ("page_size == head_num > 1", lambda g: g.page_size == g.head_num > 1),
        ("v_head_dim 128 under head_dim 192", lambda g: (g.head_dim, g.v_head_dim) == (192, 128)),
    ],
)
def test_geometries_reach(what, condition):
    find(geometries("mha", "bf16"), condition, settings=SEARCH)


def test_mla_and_swa_geometries_reach_528_rope_and_interleaved_sub_pools():
    find(
        geometries("mla", "bf16"),
        lambda g: (g.kv_lora_rank, g.qk_rope_head_dim) == (528, 64),
        settings=SEARCH,
    )
    g = find(
        geometries("swa_mha", "bf16"),
        lambda g: (
            len(g.swa_layer_ids) >= 2 and len(g.full_layer_ids) >= 2 and g.swa_layer_ids[0] == 0
        ),
        settings=SEARCH,
    )
    assert g.size_swa <= g.size


@pytest.mark.slow
def test_scenarios_shrink_toward_one_layer_one_head_page_size_one_and_one_token():
    simplest = find(scenarios("mha", "bf16"), lambda s: any(s.forwards[0].loc), settings=SEARCH)
    g = simplest.geometry
    assert (g.layer_num, g.page_size, g.head_num, len(simplest.forwards)) == (1, 1, 1, 1)
    assert simplest.forwards[0].loc == [1]
