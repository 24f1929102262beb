"""Whether a release's base write doors run on this machine: one small real write through each,
the way a run drives it (its call site, its worker, the verdict's skips), for `kvh sut install`.

A release that imports may still be unable to write here: a door that lazily imports a GPU-only
module, calls a stand-in, or launches a kernel without a device. A run would show each such
check as a skip (harness/compare/error_causes.py, harness/sut/probe/limits.py); the install says
so up front instead of only that the release imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from backends.registry import backend_named
from harness.plan.candidate import Candidate
from harness.run.baselines import decide, run_baselines
from harness.run.cells import execute_candidate
from harness.sut.load.loader import LoadedSut
from harness.sut.probe.limits import limit_before
from pools.builtin.layouts.kinds import class_name_of
from pools.kinds.token_major import MHA, MLA, SWA_MHA
from reports.outcome import Outcome
from scenarios.defaults import default_scenarios

TRIAL_SCENARIO, TRIAL_DTYPE, TRIAL_DEVICE = "decode", "bf16", "cpu"


@dataclass(frozen=True)
class BaseDoor:
    """A base pool kind's write door, and the call site that writes through it."""

    pool: str
    door: str
    backend: str

    @property
    def name(self) -> str:
        return f"{class_name_of(self.pool)}.{self.door}"


BASE_DOORS = (
    BaseDoor(MHA.name, "set_kv_buffer", "plain"),
    BaseDoor(MLA.name, "set_mla_kv_buffer", "plain_mla"),
    BaseDoor(SWA_MHA.name, "set_kv_buffer", "plain"),
)


# What a trial write shows: it ran as its baseline did; the harness cannot run it here (a skip
# in a run); it ran and the verdict has a finding, the release's own.
WRITES, CANNOT_RUN, FINDING = "writes here", "cannot run here", "a finding here"


@dataclass(frozen=True)
class DoorTrial:
    door: BaseDoor
    status: str  # WRITES, CANNOT_RUN or FINDING
    why: str = ""  # the skip's reason, or the first finding

    @property
    def runs(self) -> bool:
        return self.status != CANNOT_RUN

    def describe(self) -> str:
        where = f"{self.door.name} ({self.door.pool}, the {self.door.backend} call site)"
        return f"{self.status}: {where}" + (f": {self.why}" if self.why else "")


def try_door(loaded: LoadedSut, door: BaseDoor, timeout_s: float = 60.0) -> DoorTrial:
    """One small scenario through `door`, judged as a run judges it."""
    offered = loaded.offered
    if offered is not None and class_name_of(door.pool) not in offered:
        return DoorTrial(door, CANNOT_RUN, f"the release offers no {class_name_of(door.pool)} here")
    if loaded.era is None:
        return DoorTrial(door, CANNOT_RUN, f"it fits no modelled call convention ({loaded.unfit})")
    limit = limit_before(loaded.capabilities, door.pool, TRIAL_DEVICE, door.backend)
    if limit is not None:
        return DoorTrial(door, CANNOT_RUN, f"{limit.name}: {limit.reason}")
    backend = backend_named(door.backend)
    scenario = _trial_scenario(door.pool)
    candidate = Candidate(
        loaded.spec,
        loaded.module,
        loaded.era,
        "-",
        TRIAL_DEVICE,
        door.backend,
        capabilities=loaded.capabilities,
        in_worker=loaded.in_worker,
    )
    baselines = run_baselines(scenario, backend, candidate.mode, (loaded.era,), timeout_s)
    ran = execute_candidate(candidate, scenario, baselines.runs[loaded.era], timeout_s, backend)
    verdict = decide(baselines, candidate, ran)
    if verdict.outcome is Outcome.SKIPPED:
        return DoorTrial(door, CANNOT_RUN, verdict.skip_reason)
    if verdict.outcome is Outcome.FINDING:
        return DoorTrial(door, FINDING, verdict.findings[0].headline())
    return DoorTrial(door, WRITES)


def try_base_doors(loaded: LoadedSut, timeout_s: Optional[float] = 60.0) -> list[DoorTrial]:
    return [try_door(loaded, door, timeout_s or 60.0) for door in BASE_DOORS]


def _trial_scenario(pool: str):
    """The builtin `decode` scenario of the pool kind: a few one-token forwards."""
    return next(s for s in default_scenarios(pool, TRIAL_DTYPE, 0) if s.name == TRIAL_SCENARIO)
