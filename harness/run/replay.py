"""Replaying a repro file: the candidate it names rebuilt and its scenario run again, judged as
the run judged it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from backends.registry import BACKENDS, backend_named
from harness.compare.findings import Finding
from harness.plan.baseline import baseline_for, baseline_module
from harness.plan.call_site_overrides import with_call_site_overrides
from harness.plan.candidate import Candidate
from harness.plan.sut_choice import candidate_module, load_sut, stop_loaded, with_cp_group
from harness.report.cell_result import ERA_TABLE_SUT, CellResult
from harness.report.repro_files import load_repro
from harness.run.cells import check_cell, check_scenario
from harness.sut.load.loader import LoadedSut, parse_builtin
from harness.sut.worker.cp_group import CP_WORLD
from pools.builtin.sut import builtin_module


def rebuild_candidate(
    description: dict, device: Optional[str] = None
) -> tuple[Candidate, Optional[LoadedSut]]:
    backend_named(description["backend"])
    device = device or description["device"]
    if description["sut"] == ERA_TABLE_SUT:  # an era-table row: the baseline through one era's site
        return Candidate(
            ERA_TABLE_SUT,
            baseline_module(description["era"]),
            description["era"],
            description["engine"],
            "cpu",
            description["backend"],
            description["mode"],
        ), None
    if parse_builtin(description["sut"]) is not None:
        module = builtin_module(description["era"], description["engine"])
        return Candidate(
            description["sut"],
            module,
            description["era"],
            description["engine"],
            device,
            description["backend"],
            description["mode"],
        ), None
    loaded = with_cp_group(load_sut(description["sut"]), description["sut"], CP_WORLD)
    module, in_worker = candidate_module(loaded, description["backend"])
    return Candidate(
        description["sut"],
        module,
        description["era"],  # the call convention it ran through (probed, or forced by --era)
        "-",
        device,
        description["backend"],
        description["mode"],
        capabilities=loaded.capabilities,
        in_worker=in_worker,
    ), loaded


def replay(path: Path, device: Optional[str] = None) -> tuple[dict, list[Finding], CellResult]:
    """Judge the repro's candidate again; returns (candidate description, old findings, result)."""
    scenario, description, old = load_repro(path)
    candidate, loaded = rebuild_candidate(description, device)
    # A mutant's faulty call site (BACKEND_OVERRIDES) replays with it.
    table, _ = with_call_site_overrides(candidate.module, BACKENDS)
    backend = table[candidate.backend]
    if candidate.sut == ERA_TABLE_SUT:
        rows = check_cell(scenario, backend, candidate.mode, [], 60.0, (candidate.era,))
        return description, old, next(r for r in rows if r.era_baseline.era == candidate.era)
    try:
        results = check_scenario(
            scenario, baseline_for(backend, candidate.mode), [candidate], 60.0, backend
        )
    finally:
        stop_loaded(loaded)
    return description, old, results[0]
