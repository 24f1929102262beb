"""Each oracle passes on agreement and fails on the one kind of difference it is for."""

from __future__ import annotations

import copy

import pytest

from backends.registry import backend_named
from harness.compare.comparison import judge
from harness.compare.expectations import PADDING_SINK, expected_writes
from harness.compare.oracles import ORACLES
from harness.compare.snapshot import CANARY
from harness.plan.baseline import baseline_for
from harness.run.execute import execute
from tests.conftest import scenario_named

ORACLE = {oracle.name: oracle for oracle in ORACLES}


@pytest.fixture(scope="module")
def case():
    scenario = scenario_named("mha", "bf16", "scaled-float", seed=3)  # mutates k/v
    baseline = execute(baseline_for(backend_named("plain"), "extend"), scenario)
    assert baseline.error is None
    return scenario, baseline, expected_writes(scenario)


def findings_of(name, case, candidate):
    scenario, baseline, expected = case
    return ORACLE[name].check(scenario, baseline, candidate, expected)


def test_every_oracle_passes_on_identical_runs(case):
    scenario, baseline, expected = case
    assert judge(scenario, baseline, copy.deepcopy(baseline), expected) == []


def test_exception_oracle_fails_on_one_sided_error(case):
    broken = copy.deepcopy(case[1])
    broken.error, broken.error_at = "TypeError: boom", "forward 0, layer 1"
    found = findings_of("exception", case, broken)
    assert (
        len(found) == 1
        and "boom" in found[0].message
        and found[0].written_by == "forward 0, layer 1"
    )


def test_bytes_oracle_localises_a_flipped_byte(case):
    scenario, baseline, expected = case
    broken = copy.deepcopy(baseline)
    slot = sorted(expected["L2.v"])[5]
    head_dim_bytes = scenario.geometry.v_head_dim * 2
    broken.buffers["L2.v"][slot, head_dim_bytes + 3] ^= 0xFF  # head 1, byte 3 within it
    found = findings_of("bytes", case, broken)
    assert len(found) == 1
    f = found[0]
    assert (f.buffer, f.layer, f.slot, f.head, f.byte_offset) == (
        "L2.v",
        2,
        slot,
        "1",
        head_dim_bytes + 3,
    )
    writer = expected["L2.v"][slot]
    assert f.written_by == f"forward {writer.forward}, token {writer.token}"


def test_untouched_oracle_catches_a_stray_write_but_not_the_padding_sink(case):
    scenario, baseline, expected = case
    stray = copy.deepcopy(baseline)
    stray.buffers["L0.k"][PADDING_SINK] = 0  # slot 0 is don't-care by policy
    assert findings_of("untouched", case, stray) == []
    free = next(slot for slot in range(1, 100) if slot not in expected["L0.k"])
    stray.buffers["L0.k"][free, 0] = CANARY ^ 1
    found = findings_of("untouched", case, stray)
    assert [(f.buffer, f.slot) for f in found] == [("L0.k", free)]


def test_caller_tensor_oracle_catches_missing_in_place_division(case):
    broken = copy.deepcopy(case[1])
    name = next(iter(broken.caller))
    broken.caller[name] = broken.caller[name].clone()
    broken.caller[name][0] ^= 1
    found = findings_of("caller_tensors", case, broken)
    assert len(found) == 1 and name in found[0].message


def test_shape_oracle_catches_a_short_buffer(case):
    broken = copy.deepcopy(case[1])
    broken.buffers["L1.k"] = broken.buffers["L1.k"][:-1]
    assert [f.buffer for f in findings_of("shape", case, broken)] == ["L1.k"]


def test_reader_dtype_oracle_catches_a_reader_returning_the_raw_storage(case):
    """Bytes alike, read as another dtype: what an attention backend gets from get_key_buffer."""
    baseline = case[1]
    assert baseline.reader_dtypes["L0.k"] == "torch.bfloat16"  # SGLang's reader of a K buffer
    broken = copy.deepcopy(baseline)
    broken.reader_dtypes["L0.k"] = "torch.uint8"
    scenario, _, expected = case
    assert [f.buffer for f in judge(scenario, baseline, broken, expected)] == ["L0.k"]
    assert findings_of("reader_dtype", case, broken)[0].oracle == "reader_dtype"


def test_judge_skips_byte_oracles_when_the_candidate_raised(case):
    scenario, baseline, expected = case
    broken = copy.deepcopy(baseline)
    broken.error = "RuntimeError: x"
    broken.buffers = {}
    assert [f.oracle for f in judge(scenario, baseline, broken, expected)] == ["exception"]


def test_bytes_equal_sees_every_byte_through_its_wide_view():
    import torch

    from harness.compare.byte_compare import bytes_equal

    rows = torch.randint(0, 256, (64, 24), dtype=torch.uint8)
    for view in (rows, rows[1:], rows[:, 1:], rows[::2], rows.view(torch.int16)):
        assert bytes_equal(view, view.clone())
    for row, column in ((1, 0), (63, 23), (10, 7)):
        changed = rows.clone()
        changed[row, column] ^= 1
        assert not bytes_equal(rows[1:], changed[1:])
        assert not bytes_equal(rows[:, 1:], changed[:, 1:]) or column == 0
    assert not bytes_equal(rows, rows[:32])
