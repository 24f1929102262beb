"""What a run was asked to do: the pools, dtypes, eras, engines, backends, device, seed and
outputs the command line chose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from backends.registry import BACKENDS, Backend
from harness.plan.sharding import Shard
from pools.builtin.engines import ENGINES
from pools.builtin.eras import ERAS
from pools.dtypes import DTYPES
from scenarios.model import POOL_KINDS


@dataclass
class RunOptions:
    suts: list[str] = field(default_factory=lambda: ["builtin"])
    pools: list[str] = field(default_factory=lambda: list(POOL_KINDS))
    dtypes: list[str] = field(default_factory=lambda: list(DTYPES))
    eras: list[str] = field(default_factory=lambda: list(ERAS))
    engines: list[str] = field(default_factory=lambda: list(ENGINES))
    engines_named: bool = False  # --engine given: opt-in engines (interpreted Triton) run too
    eras_named: bool = False  # --era given: foreign SUTs run through these call conventions
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    device: Optional[str] = None  # None: each backend on its natural device, when present
    seed: int = 0
    examples: int = 0
    out: Path = Path("kvh-out")
    timeout_s: float = 30.0
    in_process: bool = False  # a user's module or file loaded in kvh's process, not a worker
    # A release loaded in kvh's process too (kvh run --in-process). kvh bench leaves it off: it
    # times a user's module here, but two releases cannot share one process.
    release_in_process: bool = False
    shard: Optional[Shard] = None  # --shard i/N: only this deterministic share of the cells
    scenarios: Optional[list] = (
        None  # user scenarios (--scenario): run these instead of the builtin set
    )
    # The call sites by backend name: the registry, or a copy with a mutant's faulty call sites.
    backend_table: Mapping[str, Backend] = field(default_factory=lambda: BACKENDS)
    # Judge each era in `eras` on the baseline against the ground truth (the era table,
    # harness/compare/verdict.py); False runs only the eras the candidates need (a mutant run).
    era_table: bool = True
    # Record the release functions every foreign check's writes run (--trail), not only a
    # finding's: the check rows' release_functions column.
    trail: bool = False
    # The folder a release's worker measures its write path's lines into (--coverage,
    # harness/run/release_lines.py); None: not measured.
    coverage: Optional[Path] = None
    # The ranks of the CP group a release's context-parallel cells run on, its own code writing
    # (harness/sut/worker/cp_group.py); 0: those cells run where the release's others do.
    cp_world: int = 0

    @property
    def planned_kinds(self) -> Optional[list[str]]:
        """The pool kinds the run plans where it plans fewer than every kind (None: every kind):
        a release's loader tries only their optional pools (harness/sut/load/optional_pools.py)."""
        return None if set(self.pools) >= set(POOL_KINDS) else list(self.pools)
