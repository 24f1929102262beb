"""A combination that cannot apply is never planned, so it is never counted as a skip: an era a
pool kind does not serve (its record's eras) and a dtype a backend does not judge a kind on
(kind_dtypes).
Combinations that could apply are still planned, each a candidate or a skip with its reason."""

from __future__ import annotations

import pytest

from backends.registry import BACKENDS
from harness.plan.candidates import Skip, candidates_for
from harness.plan.devices import unavailable_reason
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.run.cells import cells_of
from pools.kinds.registry import KINDS

BUILTIN = [SutChoice("builtin", ("reference", "torch"))]


def _eras(pool: str) -> set[str]:
    plain = BACKENDS["plain"]
    return {item.era for item in candidates_for(plain, "extend", BUILTIN, RunOptions(), pool)}


def test_an_era_a_kind_does_not_serve_is_neither_a_candidate_nor_a_skip():
    assert KINDS["unified_mha"].eras == ("current",)
    assert _eras("unified_mha") == {"current"}
    # A kind that serves every era is planned in each.
    assert {"kwarg", "bundled", "current"} <= _eras("mha")


def test_a_dtype_outside_a_kinds_judged_dtypes_plans_no_cell_of_that_backend():
    options = RunOptions(backends=["plain", "plain_mla"])
    assert not list(cells_of(options, "mha_hnd", "fp16"))  # plain judges mha_hnd on bf16, fp8
    assert [cell.backend.name for cell in cells_of(options, "mha_hnd", "bf16")] == ["plain"]
    assert not list(cells_of(options, "mha_fp4", "fp8_e4m3"))  # FP4: bf16 only
    # The base kinds keep every dtype.
    assert {cell.backend.name for cell in cells_of(options, "mha", "fp16")} == {"plain"}


def test_what_could_apply_is_still_planned_as_a_skip_with_its_reason():
    if unavailable_reason("cuda:0") is None:
        pytest.skip("a CUDA device is here, so the cell runs instead of being a skip")
    plain = BACKENDS["plain"]
    options = RunOptions(device="cuda:0", engines=["torch"])  # no CUDA here: a skip, not nothing
    torch_only = [SutChoice("builtin", ("torch",))]
    items = list(candidates_for(plain, "extend", torch_only, options, "mha"))
    assert items and all(isinstance(item, Skip) and item.reason for item in items)
