"""A kind's record names what its SGLang constructor asserts of a geometry
(pools/kinds/geometry_rules.py), and a scenario file that breaks it is refused with that reason."""

from __future__ import annotations

import pytest

from pools.kinds.registry import KINDS
from scenarios.defaults import default_scenarios
from scenarios.serialize import ScenarioError, from_dict, to_dict


@pytest.mark.parametrize(
    "pool, change, reason",
    [
        ("mha_hnd", {"size": 100, "page_size": 16}, "mha_hnd needs size a multiple of page_size"),
        ("npu_mla", {"size": 100, "page_size": 16}, "npu_mla needs size a multiple of page_size"),
        ("mha_aiter5d", {"head_dim": 12}, "mha_aiter5d needs head_dim, v_head_dim and page_size"),
        ("unified_mla", {"qk_rope_head_dim": 0}, "unified_mla needs a rope part"),
        ("unified_mha", {"head_num": 1, "head_dim": 4, "v_head_dim": None}, "16 bytes"),
        ("swa_unified", {"head_num": 1, "head_dim": 4, "v_head_dim": None}, "16 bytes"),
        ("hisparse_mha", {"v_head_dim": 8}, "a HiSparse MHA pool stores V with head_dim"),
    ],
)
def test_a_geometry_a_kind_refuses_is_refused_with_its_reason(pool, change, reason):
    data = to_dict(default_scenarios(pool, "bf16", 0)[0])
    from_dict(data)  # the kind's own default holds
    data["geometry"].update(change)
    with pytest.raises(ScenarioError, match=reason):
        from_dict(data)


def test_every_rule_is_a_named_function_with_its_why():
    rules = {rule for kind in KINDS.values() for rule in kind.geometry_rules}
    assert rules and all(rule.__doc__ and rule.__name__ != "<lambda>" for rule in rules)
