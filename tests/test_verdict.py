"""The one place that decides: era-matched verdicts, exceptions compared, and a known divergence
that never turns a mutant into a pass."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from backends.registry import BACKENDS
from harness.compare.expectations import expected_writes
from harness.compare.findings import Finding
from harness.compare.snapshot import WRITING, ErrorPlace, Execution
from harness.compare.verdict import Baselines, divergences_of, judge_candidate
from harness.plan.baseline import baseline_for
from harness.plan.call_site_overrides import with_call_site_overrides
from harness.plan.candidate import Candidate
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import resolve_suts
from harness.run.baselines import run_baselines
from harness.run.cells import check_cell, check_scenario
from harness.run.deterministic import planned_checks, run
from harness.run.execute import execute
from harness.sut.load.loader import load_foreign
from pools.builtin.sut import builtin_module
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios
from scenarios.regressions import regression_scenarios
from tests.conftest import FIXTURES
from tests.fixtures.backend_probes import probe

PLAIN, AITER = BACKENDS["plain"], BACKENDS["aiter"]


def narrowed() -> object:
    return next(
        s for s in regression_scenarios("swa_mha", "bf16") if s.name.endswith("narrowed-swa-loc")
    )


def mutant(name: str, backend: str, mode: str = "extend") -> Candidate:
    loaded = load_foreign(f"mutants.zoo.{name}")
    return Candidate(loaded.spec, loaded.module, loaded.era, "-", "cpu", backend, mode)


def builtin(era: str, backend: str, mode: str = "extend") -> Candidate:
    return Candidate("builtin", builtin_module(era, "torch"), era, "torch", "cpu", backend, mode)


def test_a_narrowed_forward_raises_at_the_first_swa_layer_with_its_place_and_snapshot():
    scenario = narrowed()
    run = execute(baseline_for(PLAIN, "extend", "kwarg"), scenario)
    first_swa = min(scenario.geometry.swa_layer_ids)
    assert run.error_type == "IndexError"
    assert run.error_place == ErrorPlace(WRITING, 0, first_swa, "set_kv_buffer")
    assert run.buffers, "the buffers as the raise left them are kept"


def test_the_correct_pool_reproduces_the_divergence_and_the_mutants_inside_it_are_findings():
    scenario = narrowed()
    correct, flip, wrong_error = check_scenario(
        scenario,
        baseline_for(PLAIN, "extend"),
        [
            builtin("kwarg", "plain"),
            mutant("narrowed_full_layer_flip", "plain"),
            mutant("narrowed_swa_wrong_error", "plain"),
        ],
        30.0,
    )
    assert (
        correct.outcome is Outcome.KNOWN_DIVERGENCE
        and correct.divergence.name == "unsliced-swa-loc"
    )
    assert flip.outcome is Outcome.FINDING and flip.divergences == ()
    finding = flip.findings[0]
    assert finding.oracle == "bytes" and finding.layer not in scenario.geometry.swa_layer_ids
    assert wrong_error.outcome is Outcome.FINDING
    assert (
        wrong_error.findings[0].oracle == "exception"
        and "ValueError" in wrong_error.findings[0].message
    )


def _narrowed_to_one() -> object:
    scenario = copy.deepcopy(narrowed())
    scenario.forwards[0].narrow = 1
    return scenario


def test_a_forward_narrowed_to_one_token_broadcasts_it_and_only_that_is_excused():
    """torch's buffer[swa_loc] = k[:1] writes the one row to every slot of the uncut swa_loc
    (SGLang 0.5.13/0.5.14 did; tests/test_torch_semantics.py): no raise, a known divergence.
    A pool that writes other bytes into those slots is a finding; one with the fix passes."""
    scenario = _narrowed_to_one()
    baselines = run_baselines(scenario, PLAIN, "extend", ["kwarg", "bundled"], 30.0)
    for era in ("kwarg", "bundled"):
        assert baselines.runs[era].error is None
        row = baselines.eras[era]
        assert row.outcome is Outcome.KNOWN_DIVERGENCE
        assert [d.name for d in row.divergences] == ["unsliced-swa-loc-broadcast"]
        assert {f.oracle for f in row.findings} <= {"untouched", "bytes", "value"}
    negated = load_foreign(str(FIXTURES / "kwarg_broadcast_negated.py"))
    cut = load_foreign(str(FIXTURES / "kwarg_cuts_swa_loc.py"))
    correct, wrong, fixed = check_scenario(
        scenario,
        baseline_for(PLAIN, "extend"),
        [
            builtin("kwarg", "plain"),
            Candidate(negated.spec, negated.module, "kwarg", "-", "cpu", "plain", "extend"),
            Candidate(cut.spec, cut.module, "kwarg", "-", "cpu", "plain", "extend"),
        ],
        30.0,
    )
    assert correct.outcome is Outcome.KNOWN_DIVERGENCE
    assert correct.divergence.name == "unsliced-swa-loc-broadcast"
    assert wrong.outcome is Outcome.FINDING
    assert {f.layer for f in wrong.findings} <= set(scenario.geometry.swa_layer_ids)
    assert fixed.outcome is Outcome.PASS


def test_the_broadcast_divergence_names_only_the_padded_tokens_swa_slots():
    scenario = _narrowed_to_one()
    broadcast = next(d for d in divergences_of(PLAIN) if d.name == "unsliced-swa-loc-broadcast")
    swa, full = min(scenario.geometry.swa_layer_ids), 0
    assert full not in scenario.geometry.swa_layer_ids
    forward, mapping = scenario.forwards[0], scenario.mapping_at(0)
    padded = {mapping[slot] for slot in forward.loc[1:]}
    assert broadcast.slots(scenario, swa) == padded and broadcast.slots(scenario, full) == set()
    own = mapping[forward.loc[0]]
    outside = next(slot for slot in range(1, 10**6) if slot not in padded and slot != own)
    untouched = Finding("untouched", "a slot that no token writes was changed", layer=swa)
    assert broadcast.covers(scenario, replace(untouched, slot=min(padded)))
    assert not broadcast.covers(scenario, replace(untouched, slot=outside))
    assert not broadcast.covers(scenario, replace(untouched, slot=min(padded), layer=full))
    assert not broadcast.applies(narrowed(), "extend")  # 9 tokens kept: that one raises


def test_a_pool_that_already_has_a_fixed_later_fix_passes():
    loaded = load_foreign(str(FIXTURES / "kwarg_cuts_swa_loc.py"))
    fixed = Candidate(loaded.spec, loaded.module, loaded.era, "-", "cpu", "plain")
    assert fixed.era == "kwarg"
    baselines = run_baselines(narrowed(), PLAIN, "extend", ("kwarg",), 30.0)
    assert baselines.eras["kwarg"].outcome is Outcome.KNOWN_DIVERGENCE
    verdict = judge_candidate(baselines, fixed.era, execute(fixed, narrowed(), 30.0, PLAIN))
    assert verdict.outcome is Outcome.PASS


def test_old_behaviour_after_a_changed_divergence_is_a_finding_and_the_new_one_is_known():
    scenario = probe("mha", "float", "fp8_e4m3")
    old = mutant("aiter_decode_no_descales", "aiter", "decode")
    correct, old = check_scenario(
        scenario,
        baseline_for(AITER, "decode"),
        [builtin("current", "aiter", "decode"), old],
        30.0,
        with_call_site_overrides(old.module, BACKENDS)[0]["aiter"],
    )
    assert correct.outcome is Outcome.KNOWN_DIVERGENCE
    assert (
        correct.divergence.name == "aiter-decode-descales" and correct.divergence.kind == "changed"
    )
    assert old.outcome is Outcome.FINDING


def test_a_known_divergence_never_turns_a_mutant_into_a_pass():
    """Every new mutant, on the scenario of the divergence it hides in, against every verdict
    that divergence could give: never PASS or KNOWN_DIVERGENCE."""
    cases = [
        ("narrowed_full_layer_flip", PLAIN, "extend", narrowed()),
        ("narrowed_swa_wrong_error", PLAIN, "extend", narrowed()),
        ("aiter_decode_no_descales", AITER, "decode", probe("mha", "float", "fp8_e4m3")),
        ("shared_cast_truncates", PLAIN, "extend", probe("mha", "float", "fp8_e4m3")),
    ]
    for name, backend, mode, scenario in cases:
        candidate = mutant(name, backend.name, mode)
        backend = with_call_site_overrides(candidate.module, BACKENDS)[0][backend.name]
        result = check_cell(scenario, backend, mode, [candidate], 30.0)[0]
        assert result.outcome is Outcome.FINDING, (name, result.outcome)


def _raised(error: str, layer: int, buffers: dict) -> Execution:
    name = error.split(":")[0]
    return Execution(
        buffers=buffers,
        error=error,
        error_type=name,
        error_at=f"forward 0, layer {layer}",
        error_place=ErrorPlace(WRITING, 0, layer, "set_kv_buffer"),
    )


@pytest.fixture(scope="module")
def raised_alike():
    """Baselines whose every era raised IndexError at
    forward 0, layer 1, after layer 0 was written."""
    scenario = probe("mha")
    written = execute(builtin("legacy", "plain"), scenario)
    runs = {
        era: _raised("IndexError: 3 slots for 2 rows", 1, copy.deepcopy(written.buffers))
        for era in PLAIN.eras
    }
    return Baselines(
        scenario, "extend", PLAIN.eras[0], runs, expected_writes(scenario), divergences_of(PLAIN)
    )


def test_both_raised_alike_is_its_own_outcome(raised_alike):
    same = _raised("IndexError: 3 slots for 2 rows", 1, copy.deepcopy(raised_alike.truth.buffers))
    assert raised_alike.eras["current"].outcome is Outcome.BOTH_RAISED
    assert judge_candidate(raised_alike, "current", same).outcome is Outcome.BOTH_RAISED
    torch_says = _raised(
        "RuntimeError: shape mismatch: value tensor of shape [2] cannot be "
        "broadcast to indexing result of shape [3]",
        1,
        copy.deepcopy(raised_alike.truth.buffers),
    )
    assert judge_candidate(raised_alike, "current", torch_says).outcome is Outcome.BOTH_RAISED


@pytest.mark.parametrize(
    "error, layer, corrupt",
    [
        ("ValueError: 3 slots for 2 rows", 1, False),  # another class
        ("IndexError: 3 slots for 2 rows", 0, False),  # another place
        ("IndexError: 3 slots for 2 rows", 1, True),  # alike, but a completed write differs
    ],
)
def test_raising_differently_or_after_writing_other_bytes_is_a_finding(
    raised_alike, error, layer, corrupt
):
    buffers = copy.deepcopy(raised_alike.truth.buffers)
    if corrupt:
        slot = next(iter(raised_alike.expected["L0.k"]))
        buffers["L0.k"][slot, 0] ^= 1
    verdict = judge_candidate(raised_alike, "current", _raised(error, layer, buffers))
    assert verdict.outcome is Outcome.FINDING
    assert verdict.findings[0].oracle == ("bytes" if corrupt else "exception")


def test_every_planned_check_is_one_row_and_skips_carry_their_reason():
    options = RunOptions(
        pools=["mha", "swa_mha"], dtypes=["bf16"], backends=["triton", "intel_amx"]
    )
    suts = resolve_suts(options)
    rows = []
    run(options, suts, rows.append)
    checks = [row for row in rows if not row.era_row]
    assert len(checks) == planned_checks(options, suts)
    outcomes = [row.outcome for row in checks]
    assert all(isinstance(outcome, Outcome) for outcome in outcomes)
    skipped = [row for row in checks if row.outcome is Outcome.SKIPPED]
    reasons = {row.skip.reason.split(":")[0] for row in skipped}
    assert {"out-of-focus", "no-cross-attention", "legacy-cross-at-out-cache-loc"} <= reasons
    assert all(row.candidate is not None for row in skipped)  # one row per candidate of the cell
    ran = [row for row in checks if row.outcome is not Outcome.SKIPPED]
    assert ran and {row.outcome for row in ran} <= {Outcome.PASS, Outcome.KNOWN_DIVERGENCE}
    assert {row.era_baseline.sut for row in rows if row.era_row} == {"model"}


@pytest.mark.slow
def test_default_scenarios_give_no_finding_against_the_model_for_plain():
    for pool in ("mha", "swa_mha", "mla"):
        for scenario in default_scenarios(pool, "fp8_e4m3" if pool == "mha" else "bf16", 0):
            if PLAIN.skip_for(scenario, "extend") is None:
                eras = run_baselines(scenario, PLAIN, "extend", PLAIN.eras, 30.0).eras
                assert all(v.outcome is not Outcome.FINDING for v in eras.values()), scenario.name
