"""A release's optional pool whose trial writes is tried only where a pool kind of the run asks
for its class (harness/sut/load/optional_pools.py): 0.5.23's FP4 trial compiles the release's
quantiser, about 3 s of every load, which a run of other kinds need not pay. A class not tried is
named, and the SUT's doors driven stay the SUT's whatever the run plans."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

from harness.sut.load import optional_pools
from harness.sut.load.optional_pool_records import OptionalPool
from pools.kinds.registry import KINDS

FP4_CLASS = KINDS["mha_fp4"].sglang_class

POOL_MODULE = f"""
WRITES = []


class {FP4_CLASS}:
    def __init__(self, **kwargs):
        self.built_with = kwargs

    def set_kv_buffer(self, layer, loc, k, v):
        WRITES.append(int(loc[0]))
"""


def test_a_pool_whose_trial_writes_is_tried_only_for_a_kind_that_asks_for_it(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "kvh_trial_pools.py").write_text(textwrap.dedent(POOL_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    record = OptionalPool(
        FP4_CLASS, "kvh_trial_pools", (FP4_CLASS,),
        lambda module: getattr(module, FP4_CLASS), {}, trial_write_layer=0,
    )  # fmt: skip
    monkeypatch.setattr(optional_pools, "OPTIONAL_POOLS", (record,))
    import kvh_trial_pools

    namespace = SimpleNamespace()
    missing, absent, untried = optional_pools.offer_optional_pools(namespace, {}, ["mha"])
    assert untried == (FP4_CLASS,) and not absent and kvh_trial_pools.WRITES == []
    assert "not tried" in missing[FP4_CLASS] and not hasattr(namespace, FP4_CLASS)
    for kinds in (["mha", "mha_fp4"], None):  # asked for, or every kind planned
        namespace = SimpleNamespace()
        missing, absent, untried = optional_pools.offer_optional_pools(namespace, {}, kinds)
        assert not missing and not untried and hasattr(namespace, FP4_CLASS)
    assert kvh_trial_pools.WRITES == [1, 1]  # one trial write each time it was tried
