"""One result row: a candidate on one scenario (or an era-table row), its outcome, findings and
divergences, as the runs stream it to the reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from backends.divergences import KnownDivergence
from harness.compare.findings import Finding
from reports.outcome import Outcome
from scenarios.model import Scenario

if TYPE_CHECKING:  # a row names what was planned; reports never plan
    from harness.plan.candidate import Candidate
    from harness.plan.candidates import Skip

# The stored sut of an era-table row (the baseline through one era's call site): "model", a
# value kept so that results written before still read as the era table.
ERA_TABLE_SUT = "model"


@dataclass
class CellResult:
    """One candidate on one scenario, or one row of the era table (`era_row`)."""

    candidate: Optional[Candidate]
    scenario: Optional[Scenario]  # None only for an UNEXPLORED row
    outcome: Outcome
    findings: list[Finding] = field(default_factory=list)
    divergences: tuple[KnownDivergence, ...] = ()
    write_ns: int = 0
    label: str = ""
    skip: Optional[Skip] = None
    reproduce: str = ""  # Hypothesis runs: the seed and the reproduce blob
    # An era-table row's subject: the baseline through one era's call site (sut ERA_TABLE_SUT);
    # such a row has no candidate.
    era_baseline: Optional[Candidate] = None
    pool: str = ""  # the cell's pool and dtype (filled from the scenario)
    dtype: str = ""
    # The release functions the candidate's writes ran (harness/run/release_trail.py), where
    # the run recorded them: a finding's, or every check's under --trail.
    release_trail: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.scenario is not None:
            self.pool, self.dtype = self.scenario.geometry.pool, self.scenario.geometry.dtype

    @property
    def divergence(self) -> Optional[KnownDivergence]:
        return self.divergences[0] if self.divergences else None

    @property
    def era_row(self) -> bool:
        return self.era_baseline is not None

    @property
    def subject(self) -> Optional[Candidate]:
        """What was run: the candidate, or an era-table row's model."""
        return self.candidate or self.era_baseline
