"""The default run's loc views, shared loc storage and remaps (issue 46): every SWA kind's
default set has them, the backends that write an SWA kind run them, and a pool that memoises its
translation wrongly is caught by the default scenarios, with the forward and slot named."""

from __future__ import annotations

import pytest

from backends.focus import LOC_LIVES
from backends.registry import BACKENDS
from harness.cli import main
from harness.report.coverage import FEATURES
from scenarios.defaults import default_scenarios
from scenarios.model import kinds_where

SWA_KINDS = kinds_where(lambda kind: kind.swa)
LOC_FEATURES = ("loc view", "shared loc storage", "remap")


@pytest.mark.parametrize("pool", SWA_KINDS)
def test_every_swa_kind_has_views_shared_storage_and_a_remap_in_its_default_set(pool):
    scenarios = {s.name: s for s in default_scenarios(pool, "bf16", seed=0)}
    micro, reuse = (scenarios[name] for name in LOC_LIVES)
    # Micro-batches: slices of one storage, two of equal length at different offsets, one not.
    assert {f.loc_storage for f in micro.forwards} == {0}
    slices = [(f.loc_offset, len(f.loc)) for f in micro.forwards]
    assert len({length for _, length in slices}) == 2 and len({o for o, _ in slices}) == 3
    # Remaps: the same slots through the same view, re-registered, then changed in place, each
    # time to other SWA slots than the write before had.
    assert len({(f.loc_storage, f.loc_offset, tuple(f.loc)) for f in reuse.forwards}) == 1
    assert [f.remap.in_place for f in reuse.forwards[1:]] == [False, True]
    slot = reuse.forwards[0].loc[0]
    swa_slots = [reuse.mapping_at(index)[slot] for index in range(3)]
    assert swa_slots[0] != swa_slots[1] != swa_slots[2] and 0 not in swa_slots
    exercised = {name for s in (micro, reuse) for name, hit in FEATURES.items() if hit(s)}
    assert set(LOC_FEATURES) <= exercised


def test_plain_plain_mla_and_the_real_code_backends_of_swa_kinds_run_them():
    writers = [entry for entry in BACKENDS.values() if set(entry.pool_kinds) & set(SWA_KINDS)]
    assert {"plain", "plain_mla", "torch_native", "triton", "flashinfer"} <= {
        entry.name for entry in writers
    }
    for entry in writers:
        for mode in entry.modes:
            assert set(LOC_LIVES) <= set(entry.focus.get(mode, ())), (entry.name, mode)


@pytest.mark.parametrize(
    "fixture, scenario, where",
    [
        # Forward 1's slice has forward 0's storage and length: it gets forward 0's SWA slots,
        # so slot 16 (forward 0's) holds forward 1's values.
        ("scenario_storage_keyed", "micro-batches", "slot 16, head 0, byte 0, forward 0"),
        # Forward 1 writes slots 16.. again after register_mapping moved them to SWA slot 32..:
        # the memo still says 16.., so slot 32 keeps the pool's fill.
        ("scenario_memo_survives_remap", "remap-reuse", "slot 32, head 0, byte 0, forward 1"),
    ],
)
def test_a_pool_memoising_its_translation_wrongly_is_caught_by_the_default_run(
    fixture, scenario, where, tmp_path, capsys
):
    status = main(
        ["run", "--sut", f"tests/fixtures/{fixture}.py", "--pool", "swa_mha", "--dtype", "bf16",
         "--backend", "plain", "--out", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1, out[-2000:]
    findings = [line for line in out.splitlines() if line.startswith("FINDING")]
    assert any(f"`{scenario}`" in line and where in line for line in findings), findings
