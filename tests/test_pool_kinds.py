"""The pool kind records (pools/kinds/): one per kind, validated when declared, and the scenario
model's kind sets and Geometry's traits read from them rather than from the kind's name."""

from __future__ import annotations

import pytest

from pools.builtin_sut import builtin_module
from pools.kinds.registry import KINDS
from pools.kinds.spec import PoolKind
from scenarios.model import DSA_INDEX_KINDS, MLA_POOL_KINDS, POOL_KINDS, Geometry


@pytest.mark.parametrize(
    "fields, problem",
    [
        (dict(family="paged"), "family"),
        (dict(eras=("legacy", "v0")), "eras"),
        (dict(eras=()), "eras"),
        (dict(base=True, family="layout"), "base kind"),
        (dict(dsa_mla=True), "DSA pool"),
        (dict(unified_draft=True), "fused draft"),
        (dict(qsa=True), "QSA"),
        (dict(keeps_kv=False), "no K/V"),
    ],
)
def test_a_contradictory_record_fails_when_declared(fields, problem):
    with pytest.raises(ValueError, match=problem):
        PoolKind(
            **{"name": "bad", "sglang_class": "X", "family": "token-major", "order": 99} | fields
        )


def test_every_kind_is_one_record_in_order_and_the_builtin_offers_its_class():
    assert POOL_KINDS == tuple(KINDS) and len(set(POOL_KINDS)) == len(POOL_KINDS) >= 31
    assert [kind.order for kind in KINDS.values()] == sorted(kind.order for kind in KINDS.values())
    module = builtin_module("current", "torch")
    assert all(hasattr(module, kind.sglang_class) for kind in KINDS.values())


def test_geometry_reads_its_traits_from_the_record():
    for name, kind in KINDS.items():
        g = Geometry(name, "bf16", 16, 1, 1)
        assert g.kind is kind
        assert (g.kind.swa, g.kind.latent, g.kind.keeps_kv, g.kind.fp4) == (
            kind.swa,
            kind.latent,
            kind.keeps_kv,
            kind.fp4,
        )
        assert (name in MLA_POOL_KINDS, name in DSA_INDEX_KINDS) == (kind.latent, kind.dsa_index)
