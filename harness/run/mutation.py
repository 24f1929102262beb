"""Run the differential suite against one mutant until the first finding kills it.

The mutant is the only SUT; the run is `kvh run --profile` (harness.run.exploring.explore_run: each
cell's named regressions, then Hypothesis examples, a failure shrunk) restricted to the
mutant's pool kinds, dtypes and backends. The profile's generation budget is replaced by the
mutant's own, so a mutant that no scenario kills in time survives with "budget exhausted".

Examples to kill: the scenarios judged against the mutant, in run order, up to and including
the one that killed it: every regression scenario and every Hypothesis example that passed (or
was explained by a known divergence), plus the killing scenario itself. Shrinking steps are not
counted; skipped cells are not counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from backends.registry import BACKENDS
from harness.plan.call_site_overrides import with_call_site_overrides
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice
from harness.report.cell_result import CellResult
from harness.report.repro_files import save_repro
from harness.run.exploring import Exploring, explore_run
from harness.sut.load.loader import load_foreign
from mutants.catalog import Mutant
from reports.outcome import MutantOutcome, Outcome, normalised
from scenarios.profiles import Profile


@dataclass
class MutantResult:
    mutant: Mutant
    outcome: MutantOutcome
    oracle: str = ""
    examples: int = 0  # examples to kill (see the module docstring); judged so far if alive
    seconds: float = 0.0
    repro: str = ""
    killed_by: str = ""  # the candidate label and scenario of the killing finding
    detail: str = ""
    call_site: tuple[str, ...] = ()

    @property
    def killed(self) -> bool:
        return self.outcome == MutantOutcome.KILLED


class _Killed(Exception):
    def __init__(self, result: CellResult) -> None:
        super().__init__(result.label)
        self.result = result


def run_mutant(
    mutant: Mutant, profile: Profile, seed: int, out: Path, budget_s: float, timeout_s: float = 30.0
) -> MutantResult:
    if mutant.equivalent:
        return MutantResult(mutant, MutantOutcome.EQUIVALENT, detail=mutant.equivalent)
    loaded = load_foreign(mutant.module)
    if loaded.era != mutant.era:
        raise ValueError(
            f"mutant {mutant.name}: catalog says era {mutant.era}, module is {loaded.era}"
        )
    table, overridden = with_call_site_overrides(loaded.module, BACKENDS)
    options = RunOptions(
        suts=[mutant.module],
        pools=list(mutant.pools),
        dtypes=list(mutant.dtypes),
        backends=list(mutant.backends),
        seed=seed,
        out=out,
        timeout_s=timeout_s,
        backend_table=table,
        era_table=False,
    )
    # A separate example database: a mutant's failing examples must not replay in real runs.
    # A mutant's own budget cuts its examples, whatever the profile fixes: a campaign's time is
    # bounded per mutant.
    exploring = Exploring(
        replace(profile, run_seconds=budget_s, fixed_examples=False),
        database_dir=out / "hypothesis",
    )
    judged = 0

    def on_result(result: CellResult) -> None:
        nonlocal judged
        if result.candidate is None or result.candidate.sut != mutant.module:
            return
        if normalised(result.outcome) == Outcome.FINDING:
            raise _Killed(result)
        judged += 1

    started = time.monotonic()
    killing: Optional[CellResult] = None
    try:
        explore_run(
            options,
            [SutChoice(mutant.module, ("-",), loaded)],
            exploring,
            on_result,
            lambda stats: None,
        )
    except _Killed as killed:
        killing = killed.result
    seconds = time.monotonic() - started
    if killing is None:
        outcome = MutantOutcome.EXHAUSTED if seconds >= budget_s else MutantOutcome.SURVIVED
        return MutantResult(mutant, outcome, examples=judged, seconds=seconds, call_site=overridden)
    finding = killing.findings[0]
    path = save_repro(out / "repros", killing)
    return MutantResult(
        mutant,
        MutantOutcome.KILLED,
        finding.oracle,
        judged + 1,
        seconds,
        str(path),
        f"{killing.label} `{killing.scenario.name}`",
        finding.headline(),
        overridden,
    )
