"""The outcome of every row the harness writes: checks (`kvh run`, `kvh cp`), bench cells and
mutants. One vocabulary, read by the runner, the bench, the store, the gate and the dashboard.

The values are what the results store holds; `str` members compare equal to those strings, so a
frame read back from Parquet can be filtered with the enum.
"""

from __future__ import annotations

from enum import Enum


class Outcome(str, Enum):
    # A check: one scenario through one candidate's call site, judged.
    PASS = "pass"
    FINDING = "finding"
    KNOWN_DIVERGENCE = "known_divergence"
    BOTH_RAISED = "both_raised"  # baseline and candidate raised alike: nothing was written
    SKIPPED = "skipped"  # never run, with the reason as data
    UNEXPLORED = "unexplored"  # a cell the run's budget gave no example
    # A bench cell: timed on a verified write, or no numbers and why.
    MEASURED = "measured"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class MutantOutcome(str, Enum):
    KILLED = "killed"
    SURVIVED = "survived"
    EXHAUSTED = "survived (budget exhausted)"
    EQUIVALENT = "equivalent"

    def __str__(self) -> str:
        return self.value


class SkipKind(str, Enum):
    """Why a skipped row was not run, as data (the `skip_kind` column), decided where the skip
    is declared (backends/skips.py BackendSkip.kind), never read from its reason's words. Only
    SKIPPED rows are checks that could have run here and did not; the verdict counts BY_DESIGN
    and NOT_OFFERED rows apart and out of its checks (APART)."""

    SKIPPED = "skipped"  # a declared skip of behaviour, a SUT limit, no device, a SUT not loaded
    # A trim of the plan declared as such (a builtin scenario outside a backend's focus): the
    # checks the backend keeps reach every branch of its call site, and another check covers
    # what this one would. (A combination that cannot apply is never planned at all.)
    BY_DESIGN = "by_design"
    # A pool kind the SUT does not offer at all: a user's pool file that never claimed the class,
    # or a release without it (or with another design under its name); or a backend none of
    # whose files the release has. A combination that cannot apply, counted beside BY_DESIGN,
    # never as skipped. A class the SUT has but that does not construct or write here stays
    # SKIPPED.
    NOT_OFFERED = "not_offered"

    def __str__(self) -> str:
        return self.value


# The skip kinds the verdict counts apart, not as checks.
APART = (SkipKind.BY_DESIGN, SkipKind.NOT_OFFERED)


def skip_kind_of(value: object) -> SkipKind:
    """A stored `skip_kind` cell as a SkipKind: missing (None, NaN, or "" in a row that is not a
    skip or from a store written before the column) reads as SKIPPED."""
    return SkipKind(value) if isinstance(value, str) and value else SkipKind.SKIPPED


# What store files written before the vocabulary was one said, and what it says now.
LEGACY_OUTCOMES = {"findings": Outcome.FINDING.value}


def normalised(outcome: str) -> str:
    """`outcome` in today's vocabulary: a legacy spelling becomes its current value."""
    return LEGACY_OUTCOMES.get(str(outcome), str(outcome))
