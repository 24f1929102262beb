"""Explore one cell with Hypothesis: draw scenarios, check each, shrink the first failure.

`check` runs a scenario through the harness and returns its results; `failed` judges them.
Hypothesis shrinks a failing scenario to its minimal form and replays that one last, so the
failure kept here is the minimal one. The reproduce blob comes from Hypothesis's own note.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hypothesis import assume, given
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from scenarios.model import Scenario

BLOB = re.compile(r"@reproduce_failure\(.*\)")


class ScenarioFailed(AssertionError):
    """Raised inside the Hypothesis test so that it shrinks; carries nothing but a message."""


# Draws in a row that a declared skip removes before a cell counts as all skipped.
MAX_REJECTED = 50


class BudgetSpent(BaseException):
    """Stops Hypothesis at once when the time budget is spent (no failure to shrink): not an
    Exception, so Hypothesis treats it as fatal rather than as a failure, and draws no more
    scenarios only to reject them (each draw costs about as much as a check)."""


@dataclass
class Exploration:
    examples: int = 0  # scenarios checked, shrinking included
    generated: int = 0  # scenarios checked before the first failure
    failure: Any = None  # check()'s results for the minimal failing scenario
    scenario: Optional[Scenario] = None  # the minimal failing scenario
    blob: Optional[str] = None  # @reproduce_failure(...) for this Hypothesis version
    seconds: float = 0.0
    rejected: int = 0  # draws `skip` removed
    skip_reason: str = ""  # the last reason `skip` gave


def explore(
    strategy: st.SearchStrategy[Scenario],
    check: Callable[[Scenario], Any],
    failed: Callable[[Any], bool],
    settings: Settings,
    seed: int,
    key: str,
    budget_s: Optional[float] = None,
    on_pass: Callable[[Any], None] = lambda outcome: None,
    min_examples: int = 0,
    skip: Callable[[Scenario], Optional[str]] = lambda scenario: None,
) -> Exploration:
    """Run `check` on scenarios drawn from `strategy` until settings.max_examples, the time
    budget (new examples only: shrinking always completes; the first `min_examples` are drawn
    whatever the budget) or a failure; `key` separates the example database entries of
    different cells. A draw `skip` gives a reason for is no check: Hypothesis draws again, and
    after MAX_REJECTED such draws without a check the cell stops (it is all skipped)."""
    result = Exploration()
    started = time.monotonic()

    def body(scenario: Scenario) -> None:
        over_budget = (
            budget_s is not None
            and time.monotonic() - started > budget_s
            and result.generated >= min_examples
        )
        if over_budget and result.failure is None:
            raise BudgetSpent()
        reason = skip(scenario)
        if reason is not None:
            result.rejected, result.skip_reason = result.rejected + 1, reason
            if result.generated == 0 and result.failure is None and result.rejected >= MAX_REJECTED:
                raise BudgetSpent()
            assume(False)
        result.examples += 1
        outcome = check(scenario)
        if failed(outcome):
            result.failure, result.scenario = outcome, scenario
            raise ScenarioFailed(f"scenario {scenario.name} failed")
        if result.failure is None:
            result.generated += 1
            on_pass(outcome)

    test = given(strategy)(body)
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key.encode()
    try:
        settings(hypothesis_seed(seed)(test))()
    except ScenarioFailed as error:
        notes = "\n".join(getattr(error, "__notes__", []))
        match = BLOB.search(notes)
        result.blob = match.group(0) if match else None
    except (BudgetSpent, Unsatisfiable):  # the budget ran out
        pass
    result.seconds = time.monotonic() - started
    return result
