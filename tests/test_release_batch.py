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
    batch = forward_batch(sglang, out_cache_loc=loc, out_cache_loc_is_physical=True)
    assert type(batch) is sglang.ForwardBatch and vars(batch)[HARNESS_FILLED]
    assert set(declared_defaults(sglang.ForwardBatch)) <= set(vars(batch))
    written = sglang.KVWriteLoc.for_batch(batch)
    assert torch.equal(written.loc, loc) and written.physical is True


def test_the_real_code_driver_s_batch_holds_every_release_default(sglang):
    defaults = _batch_defaults()
    assert defaults == declared_defaults(sglang.ForwardBatch) and "kv_loc_plan" in defaults
