"""The pool kind records (pools/kinds/): one per kind, validated when declared, and the scenario
model's kind sets and Geometry's traits read from them rather than from the kind's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pools.builtin.sut import builtin_module
from pools.kinds.registry import KINDS
from pools.kinds.spec import PoolKind, names
from pools.kinds.token_major import MHA, MLA
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
        (dict(rope_required=True), "rope part"),
        (dict(v_as_k=True, latent=True), "V width"),
        (dict(page_multiple=0), "page_multiple"),
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


def test_a_kind_without_doors_of_its_own_writes_through_its_family_door():
    assert MLA.doors == () and MLA.write_doors == ("set_kv_buffer", "set_mla_kv_buffer")
    assert "set_kv_buffer_prefix_valid" in MHA.write_doors
    assert all(kind.write_doors for kind in KINDS.values())
    assert names(MLA, MHA) == ("mla", "mha")


ROOT = Path(__file__).resolve().parents[1]
# Where a kind's name is quoted outside its records, as the name of something else: a backend
# named after the kind it writes (dsv4, dsv4_indexer, minimax_sparse, qsa) and a release
# capability named after the kind it offers (swa_dsa, hybrid_linear_dsa).
QUOTED_AS_ANOTHER_NAME = {
    "backends/dsv4.py": {"dsv4"},
    "backends/dsv4_indexer.py": {"dsv4_indexer"},
    "backends/minimax_sparse.py": {"minimax_sparse"},
    "backends/qsa.py": {"qsa"},
    "harness/sut/probe/capabilities.py": {"swa_dsa", "hybrid_linear_dsa"},
    "harness/sut/probe/limits.py": {"swa_dsa", "hybrid_linear_dsa"},
    "harness/sut/probe/source_capabilities.py": {"swa_dsa"},
}


def test_code_names_a_kind_through_its_record_not_a_quoted_name():
    """Outside pools/kinds/ (the records), tests/ and mutants/, code refers to a kind by its
    record (pools.kinds.spec.names) or a trait, so a renamed or removed kind fails at import."""
    quoted = re.compile(r"""["'](%s)["']""" % "|".join(sorted(KINDS, key=len, reverse=True)))
    found = {}
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith((".", "tests/", "pools/kinds/", "mutants/", "build/", "kvh-out/")):
            continue
        names_quoted = set(quoted.findall(path.read_text()))
        if names_quoted:
            found[relative] = names_quoted
    assert found == QUOTED_AS_ANOTHER_NAME
