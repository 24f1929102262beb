"""Settings profiles for Hypothesis-driven runs, declared as data and chosen explicitly.

`kvh run --profile NAME` (or KVH_PROFILE=NAME) picks one. Profiles never touch Hypothesis's global
profile registry: each run builds its own `settings` object from the table below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

PROFILE_ENV = "KVH_PROFILE"
DATABASE_ENV = "KVH_HYPOTHESIS_DB"
DEFAULT_DATABASE = Path(".hypothesis") / "kvh"


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int  # per (pool, dtype, backend, mode) cell
    derandomize: bool  # the same examples on every run and machine
    database: bool  # keep failing and covering examples in a directory database
    run_seconds: Optional[float]  # generation budget of the whole run, shared by its cells
    # The largest pool a scenario may build: 5 MiB holds 2^17 slots of the narrowest rows of
    # every pool kind (aiter 5-D, the widest of them, has 16-byte k and v rows) but those whose
    # rows are fixed wider, which declare a floor (their records' PoolKind.reach_floor_bytes).
    pool_bytes: int
    summary: str
    # Examples every cell gets even past its share of run_seconds: a slow cell is explored a
    # little rather than not at all.
    min_examples: int = 3
    # Every cell draws max_examples whatever the clock says, so a derandomised run checks the
    # same scenarios on every machine and under any load; run_seconds is then what the profile
    # is sized for on the reference 2-core machine, not a cut.
    fixed_examples: bool = False

    def settings(
        self,
        max_examples: Optional[int] = None,
        database_dir: Optional[Path] = None,
        shrink: bool = True,
    ) -> settings:
        """`shrink=False`: a failure is reported as drawn (a mutation judge needs the kill, not
        a minimal repro; shrinking a CP failure restarts the rank group at every step)."""
        return settings(
            max_examples=max_examples or self.max_examples,
            derandomize=self.derandomize,
            # Executions run eight and more pools each and share two cores: timing is no signal.
            deadline=None,
            print_blob=True,
            database=DirectoryBasedExampleDatabase(str(database_dir or DEFAULT_DATABASE))
            if self.database
            else None,
            phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
            + ((Phase.shrink,) if shrink else ()),
            suppress_health_check=(
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
                HealthCheck.large_base_example,
            ),
        )


MIB = 2**20
PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile("dev", 4, False, False, 60.0, 2 * MIB, "fast: a few random examples per cell"),
        Profile(
            "ci",
            12,
            True,
            False,
            200.0,
            5 * MIB,
            "derandomised, no deadline, reproduce blobs printed; fits 5 minutes on 2 cores",
            fixed_examples=True,
        ),
        Profile(
            "nightly",
            200,
            False,
            True,
            None,
            40 * MIB,
            "many examples, large pools (2^17 slots), a directory example database "
            f"(${DATABASE_ENV}, default {DEFAULT_DATABASE}) for CI to cache and restore",
        ),
    )
}


def profile_named(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose from {', '.join(PROFILES)}") from None


def chosen_profile(flag: Optional[str], environ: dict) -> Optional[Profile]:
    """The --profile flag, else $KVH_PROFILE, else None (the builtin deterministic set)."""
    name = flag or environ.get(PROFILE_ENV) or None
    return None if name is None else profile_named(name)


def database_dir(environ: dict) -> Path:
    return Path(environ.get(DATABASE_ENV) or DEFAULT_DATABASE)
