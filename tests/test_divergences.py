"""Each known divergence is declared exactly: kind, PR or evidence, and a scope that excuses
nothing outside it."""

from __future__ import annotations

import re

import pytest

from backends.divergences import DIVERGENCES, KINDS, KnownDivergence
from backends.registry import BACKENDS
from harness.compare.findings import Finding
from harness.compare.oracles import ORACLES
from harness.compare.verdict import covering
from scenarios.regressions import regression_scenarios

EVERY = (*DIVERGENCES, *(d for entry in BACKENDS.values() for d in entry.divergences))
ORACLE_NAMES = {oracle.name for oracle in ORACLES}


@pytest.mark.parametrize("divergence", EVERY, ids=lambda d: d.name)
def test_every_divergence_says_what_it_rests_on(divergence: KnownDivergence):
    assert divergence.kind in KINDS and divergence.eras and divergence.reason
    assert divergence.oracles and divergence.oracles <= ORACLE_NAMES
    re.compile(divergence.message)
    if divergence.pr:
        assert re.fullmatch(r"#\d+", divergence.pr), divergence.pr
    else:
        # No PR: the evidence names what was compared and in which file.
        assert re.search(r"\b0\.5\.\d+\b.*\b0\.5\.\d+\b", divergence.evidence), divergence.evidence
        assert re.search(r"\w+\.py\b", divergence.evidence) and "no PR" in divergence.evidence
    assert divergence.source.startswith("#") or divergence.source.startswith("no PR")


def test_every_divergence_name_is_declared_once():
    names = [divergence.name for divergence in EVERY]
    assert len(names) == len(set(names))


def _explained(divergence: KnownDivergence, scenario, mode: str, findings: list) -> bool:
    """What harness/compare/verdict.py decides: every finding covered by this divergence."""
    return bool(findings) and covering(scenario, mode, findings, [divergence]) is not None


def _narrowed():
    return next(
        s for s in regression_scenarios("swa_mha", "bf16") if s.name.endswith("narrowed-swa-loc")
    )


def _raised(
    layer: int, door: str = "set_kv_buffer", message: str = "IndexError: 16 slots for 9 rows"
):
    return Finding(
        "exception",
        f"raised where the baseline did not: {message}",
        forward=0,
        layer=layer,
        door=door,
    )


def test_unsliced_swa_loc_explains_only_the_raise_at_the_first_swa_layer_of_the_narrowed_forward():
    unsliced = next(d for d in DIVERGENCES if d.name == "unsliced-swa-loc")
    scenario = _narrowed()
    first_swa = min(scenario.geometry.swa_layer_ids)
    full = next(
        layer
        for layer in range(scenario.geometry.layer_num)
        if layer not in scenario.geometry.swa_layer_ids
    )
    assert _explained(unsliced, scenario, "extend", [_raised(first_swa)])
    assert not _explained(unsliced, scenario, "extend", [_raised(full)])  # a full layer
    assert not _explained(unsliced, scenario, "extend", [_raised(first_swa, "register_mapping")])
    assert not _explained(
        unsliced, scenario, "extend", [_raised(first_swa, message="ValueError: no")]
    )
    assert not _explained(
        unsliced,
        scenario,
        "extend",
        [
            _raised(first_swa),
            Finding("bytes", "written bytes differ from the baseline", forward=0, layer=full),
        ],
    )
    assert not _explained(unsliced, scenario, "extend", [])


def test_a_divergence_needs_its_scenario():
    unsliced = next(d for d in DIVERGENCES if d.name == "unsliced-swa-loc")
    unnarrowed = next(s for s in regression_scenarios("swa_mha", "bf16") if not s.narrowed)
    assert not _explained(
        unsliced, unnarrowed, "extend", [_raised(min(unnarrowed.geometry.swa_layer_ids))]
    )
