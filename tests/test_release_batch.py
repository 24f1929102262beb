"""Each write's ForwardBatch is the installed release's own class with its own defaults
(backends/release_batch.py), and the real-code driver's batch carries those defaults too, so a
field a release adds with a default reads as it ships instead of stopping the driver."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from backends.real_code import _batch_defaults
from backends.release_batch import HARNESS_FILLED, declared_defaults, forward_batch
from harness.sut.load.sglang_loader import SutLoadError, load_sglang

pytestmark = pytest.mark.sglang


@pytest.fixture(scope="module")
def sglang():
    try:
        return load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")


def test_defaults_are_fresh_values_of_each_declared_default():
    @dataclasses.dataclass
    class Batch:
        required: int
        flag: bool = True
        rows: list = dataclasses.field(default_factory=list)

    first, second = declared_defaults(Batch), declared_defaults(Batch)
    assert first == {"flag": True, "rows": []} and first["rows"] is not second["rows"]


def test_the_release_s_for_batch_reads_its_own_batch_class(sglang):
    loc = torch.arange(1, 5)
    batch = forward_batch(sglang, out_cache_loc=loc)
    assert type(batch) is sglang.ForwardBatch and vars(batch)[HARNESS_FILLED]
    assert set(declared_defaults(sglang.ForwardBatch)) <= set(vars(batch))
    written = sglang.KVWriteLoc.for_batch(batch)
    assert torch.equal(written.loc, loc) and written.physical is True


def test_the_real_code_driver_s_batch_holds_every_release_default(sglang):
    defaults = _batch_defaults()
    assert defaults == declared_defaults(sglang.ForwardBatch) and "kv_loc_plan" in defaults


def test_a_marked_batch_is_bound_by_the_release_s_own_plan(sglang):
    """The release's plan (KVIndexTranslator.bind_own_plan) marks the batch, under whatever name
    its for_batch reads; an unmarked batch is one its plan never bound."""
    if getattr(sglang, "bind_write_plan", None) is None:
        pytest.skip(f"sglang {sglang.version} has no write-loc plan (before 0.5.22)")
    loc = torch.arange(1, 5)
    marked = forward_batch(sglang, True, out_cache_loc=loc)
    unmarked = forward_batch(sglang, False, out_cache_loc=loc)
    assert sglang.KVWriteLoc.for_batch(marked).physical is True
    assert sglang.KVWriteLoc.for_batch(unmarked).physical is False
    # The plan's own work, not the harness's: it attached itself and kept the pool's ids.
    assert type(vars(marked)["kv_loc_plan"]).__name__ == "KVLocPlan"
    assert vars(unmarked)["kv_loc_plan"] is None and torch.equal(marked.out_cache_loc, loc)


def test_the_real_code_driver_takes_the_batch_as_the_plan_bound_it(sglang):
    """The driver's batch for a release backend carries what the plan set (the mark included)."""
    if getattr(sglang, "bind_write_plan", None) is None:
        pytest.skip(f"sglang {sglang.version} has no write-loc plan (before 0.5.22)")
    from backends.context import Layer, Metadata, WriteRequest
    from backends.real_code import RealCode, prepare_forward

    seen = {}

    class Backend:
        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
            seen["physical"] = sglang.KVWriteLoc.for_batch(forward_batch).physical

    pool = sglang.MHATokenToKVPool(
        size=8, page_size=1, dtype=torch.bfloat16, head_num=1, head_dim=4, layer_num=1,
        device="cpu", enable_memory_saver=False,
    )  # fmt: skip
    loc, row = torch.tensor([1, 2]), torch.ones(2, 1, 4, dtype=torch.bfloat16)
    for physical in (True, False):
        request = WriteRequest(
            api=sglang, pool=pool, layer=Layer(0), metadata=Metadata(), k=row, v=row,
            forward_batch=forward_batch(sglang, physical, out_cache_loc=loc, token_to_kv_pool=pool),
        )  # fmt: skip
        real = RealCode(module="tests", cls="Backend", construct=False, own_metadata=False)
        prepare_forward(real, Backend, request, "extend", "latent")(False)
        assert seen.pop("physical") is physical
