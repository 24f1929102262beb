"""Explore one cell with Hypothesis: draw scenarios, check each, shrink each failure.

`check` runs a scenario through the harness and returns its results; `failed` judges them.
Hypothesis shrinks a failing scenario to its minimal form and replays that one last, so the
failure kept here is the minimal one. The reproduce blob comes from Hypothesis's own note.

The test body is a pure function of its scenario: it never reads the clock or what earlier
examples did, so a replay takes the path the first call took. How many examples a cell gets is
decided before Hypothesis starts (`examples_within`, from a time budget), and whether a declared
skip leaves the cell anything to draw is asked first, by a search that checks nothing
(`first_unskipped`). Whatever Hypothesis ends with, one failure, several distinct ones, or a
failure it could not replay (a SUT that behaves differently on a second call), every failing
check it saw is kept as a `Failure`: never an exception out of here.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from hypothesis import HealthCheck, Phase, assume, find, given
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, NoSuchExample, Unsatisfiable

from scenarios.model import Scenario

try:
    from builtins import BaseExceptionGroup
except ImportError:  # Python 3.10: the backport Hypothesis itself depends on there
    from exceptiongroup import BaseExceptionGroup

BLOB = re.compile(r"@reproduce_failure\(.*\)")

# Draws a declared skip may remove before a cell counts as all skipped.
MAX_REJECTED = 50


class ScenarioFailed(AssertionError):
    """Raised inside the Hypothesis test so that it shrinks; names the failing call by its index
    in Exploration.calls."""

    def __init__(self, call: int):
        super().__init__(f"failing check #{call}")
        self.call = call


@dataclass(frozen=True)
class Failure:
    """A failing check Hypothesis reported: its scenario, check()'s results and how to replay it."""

    scenario: Scenario
    results: Any
    blob: Optional[str]  # @reproduce_failure(...) for this Hypothesis version
    replayed: bool  # False: it failed, but not again when Hypothesis replayed it (flaky)


@dataclass
class Exploration:
    examples: int = 0  # scenarios checked, shrinking included
    generated: int = 0  # scenarios checked before the first failure
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    skip_reason: str = ""  # set when a declared skip removed every draw
    rejected: int = 0  # draws that skip removed, in the search and the exploration
    calls: list[tuple[Scenario, Any]] = field(default_factory=list)  # every failing check

    @property
    def failure(self) -> Any:
        """The first reported failure's results (None: nothing failed)."""
        return self.failures[0].results if self.failures else None

    @property
    def scenario(self) -> Optional[Scenario]:
        return self.failures[0].scenario if self.failures else None

    @property
    def blob(self) -> Optional[str]:
        return self.failures[0].blob if self.failures else None


def examples_within(
    budget_s: Optional[float], seconds_per_example: float, floor: int, most: int
) -> int:
    """How many examples fit a cell's time budget at the measured cost of one, at least `floor`
    and at most `most`; no budget: `most`."""
    if budget_s is None:
        return most
    fit = most if seconds_per_example <= 0 else math.floor(budget_s / seconds_per_example)
    return max(min(floor, most), min(most, fit))


def first_unskipped(
    strategy: st.SearchStrategy[Scenario], skip: Callable[[Scenario], Optional[str]]
) -> tuple[bool, int, str]:
    """Whether any of MAX_REJECTED draws is one `skip` lets through: (found, draws removed, the
    last reason). Draws only, no checks: the cheap question before an exploration that would
    otherwise draw hundreds of scenarios only to reject them. Derandomised, so every run asks
    the same draws."""
    rejected, reason = 0, ""

    def unskipped(scenario: Scenario) -> bool:
        nonlocal rejected, reason
        said = skip(scenario)
        if said is not None:
            rejected, reason = rejected + 1, said
        return said is None

    search = Settings(
        max_examples=MAX_REJECTED,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    try:
        find(strategy, unskipped, settings=search)
    except (NoSuchExample, Unsatisfiable):
        return False, rejected, reason
    return True, rejected, reason


def explore(
    strategy: st.SearchStrategy[Scenario],
    check: Callable[[Scenario], Any],
    failed: Callable[[Any], bool],
    settings: Settings,
    seed: int,
    key: str,
    on_pass: Callable[[Any], None] = lambda outcome: None,
    skip: Callable[[Scenario], Optional[str]] = lambda scenario: None,
) -> Exploration:
    """Run `check` on settings.max_examples scenarios drawn from `strategy`, shrinking each
    failure; `key` separates the example database entries of different cells. A draw `skip`
    gives a reason for is no check: Hypothesis draws again; when the first MAX_REJECTED draws
    are all skipped the cell is (result.skip_reason says why)."""
    result = Exploration()
    started = time.monotonic()
    found, result.rejected, reason = first_unskipped(strategy, skip)
    if not found:
        result.skip_reason, result.seconds = reason, time.monotonic() - started
        return result

    def body(scenario: Scenario) -> None:
        if skip(scenario) is not None:
            result.rejected += 1
            assume(False)
        result.examples += 1
        outcome = check(scenario)
        if failed(outcome):
            result.calls.append((scenario, outcome))
            raise ScenarioFailed(len(result.calls) - 1)
        if not result.calls:  # bookkeeping only: what passed before the first failure
            result.generated += 1
            on_pass(outcome)

    test = given(strategy)(body)
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key.encode()
    try:
        settings(hypothesis_seed(seed)(test))()
    except Unsatisfiable:  # every draw after the search was skipped
        pass
    except (ScenarioFailed, Flaky, BaseExceptionGroup) as error:
        result.failures = _failures(error, result.calls)
    result.seconds = time.monotonic() - started
    return result


def _failures(error: BaseException, calls: list[tuple[Scenario, Any]]) -> list[Failure]:
    """Each failure Hypothesis reported: one ScenarioFailed, a group of distinct ones, or a
    Flaky one (it failed, then passed when replayed) holding the first call's ScenarioFailed.
    An error of the harness itself is not a failure of the scenario: it propagates."""
    flaky = isinstance(error, Flaky)
    reported = _scenario_failures(error)
    if not reported:
        raise error
    failures = []
    for failure in reported:
        scenario, results = calls[failure.call]
        notes = "\n".join(getattr(failure, "__notes__", []) + getattr(error, "__notes__", []))
        match = BLOB.search(notes)
        failures.append(Failure(scenario, results, match.group(0) if match else None, not flaky))
    return failures


def _scenario_failures(error: BaseException) -> list[ScenarioFailed]:
    if isinstance(error, ScenarioFailed):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        inner = [found for part in error.exceptions for found in _scenario_failures(part)]
        if len(inner) == len(error.exceptions):  # nothing in the group but scenario failures
            return inner
    return []
