"""The baseline: the judge's pools (pools/judge) through a backend's call site of one era, on
CPU. Every candidate is compared with the baseline of its own era.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Optional

from backends.registry import Backend
from harness.plan.candidate import Candidate
from pools.judge import judge_module

# The baseline is the judge (pools/judge): it shares no code with the builtin pools, so their
# reference engine is a candidate like any other.
BASELINE_SUT, BASELINE_DEVICE = "judge", "cpu"


@cache
def baseline_module(era: str) -> Any:
    """The pools every candidate is judged against, for one era's call site. The one place that
    chooses them (harness/run/baselines.py runs them through every era's call site). Built once
    per era: the module holds only classes, and every scenario's baseline runs need them."""
    return judge_module(era)


def baseline_engine() -> str:
    """The engine name the baseline's rows and labels carry."""
    return "judge"


def baseline_for(backend: Backend, mode: str, era: Optional[str] = None) -> Candidate:
    """The baseline pools through `era`'s call site of the backend (default: the oldest era's,
    whose run is the ground truth), on CPU."""
    era = era or backend.eras[0]
    return Candidate(
        BASELINE_SUT,
        baseline_module(era),
        era,
        baseline_engine(),
        BASELINE_DEVICE,
        backend.name,
        mode,
    )


def is_baseline(candidate: Candidate) -> bool:
    """A candidate that is its own era's baseline: judging it would compare a run with itself."""
    return (
        candidate.sut == BASELINE_SUT
        and candidate.engine == baseline_engine()
        and candidate.device == BASELINE_DEVICE
    )
