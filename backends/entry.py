"""A backend's registry entry, and the decorator that declares it beside its write function.

Each backend module decorates its write function with `@register_backend(...)`; the entry rides
on the function (`entries_of(module)` reads them back) and backends.registry collects them.
The function itself is returned unchanged, so mutants and tests call it as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Optional

from backends import skips
from backends.call_shapes import CallSiteModel
from backends.context import WriteRequest
from backends.divergences import KnownDivergence
from backends.focus import BUILTIN_SCENARIOS, FOCUS, OUT_OF_FOCUS
from backends.real_code import RealCode, drive, prepare_forward, real_class
from backends.skips import BackendSkip
from pools.builtin.eras import ERAS
from pools.dtypes import DTYPES
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA
from reports.outcome import SkipKind
from scenarios.model import Scenario

WriteFn = Callable[[WriteRequest, str, str], None]  # (request, era, mode)

EXTEND_AND_DECODE = ("extend", "decode")
MHA_POOLS, MLA_POOLS = names(MHA, SWA_MHA), names(MLA)
# Why most backends run bf16 only: docs/notes/bf16-only-backends.md.
BF16_ONLY, BF16_AND_FP8 = ("bf16",), ("bf16", "fp8_e4m3")

_ENTRY = "backend_entry"

DRAFT_COMMIT = BackendSkip(
    "draft-commit",
    "scenarios whose forwards commit a draft's row prefixes (Forward.commit_lens)",
    "only a call site that commits drafts (dspark) writes a prefix of each row; every other one "
    "writes every token",
    skips.never,
)  # the attribute register_backend sets on a write function

DCP_RANK = BackendSkip(
    "dcp-rank",
    "scenarios of a decode-context-parallel rank's pool (Geometry.dcp_size > 1)",
    "only a call site that writes a DCP rank's share (triton_dcp, flashinfer_mla_dcp) hands its "
    "pool a rank's loc or every rank's ids under the rank's group; every other one writes every "
    "token at its loc on a pool of one rank",
    skips.never,
    kind=SkipKind.BY_DESIGN,
)
NOT_A_DCP_RANK = BackendSkip(
    "not-a-dcp-rank",
    "scenarios of a pool that is no decode-context-parallel rank (Geometry.dcp_size == 1)",
    "a DCP call site (triton_dcp, flashinfer_mla_dcp) is its backend's write under --dcp-size > "
    "1; with one rank it is the backend's own",
    skips.never,
    kind=SkipKind.BY_DESIGN,
)


@dataclass(frozen=True)
class ValueScope:
    """Where the value oracle judges a backend's writes against the value model: the pool kinds,
    and what the backend's call stores there (for the docs and reports)."""

    pools: tuple[str, ...]
    call: str
    # Whether the call hands the layer's k/v scales to the pool; False: it passes none, and the
    # door's defaults (1.0, an exact division) apply.
    scaled: bool = True


@dataclass(frozen=True)
class Backend:
    name: str
    device_type: str
    pool_kinds: tuple[str, ...]
    modes: tuple[str, ...]
    write: WriteFn
    eras: tuple[str, ...] = tuple(ERAS)
    summary: str = ""
    divergences: tuple[KnownDivergence, ...] = field(default=())
    skips: tuple[BackendSkip, ...] = field(default=())
    dtypes: tuple[str, ...] = tuple(DTYPES)
    # The dtypes a pool kind is judged on through this call site, where that is a subset of
    # `dtypes` (why: `kind_dtypes_reason`); any other (kind, dtype) is never planned.
    kind_dtypes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    kind_dtypes_reason: str = ""
    mla_input: str = "split"  # split: k = nope, k_rope = rope; latent: k = nope ++ rope
    focus: Optional[dict[str, tuple[str, ...]]] = field(default_factory=lambda: FOCUS)
    # The registry's sort key: its order shows in `kvh matrix` and `kvh run`. register_backend
    # requires one; an entry built outside the registry (harness/cp) needs none.
    order: int = 0
    # The release files and call shapes the source census checks this call site against; None
    # for a call site no release file holds (plain, plain_mla).
    census: Optional[CallSiteModel] = None
    value_scope: Optional[ValueScope] = None  # None: the value oracle does not judge it
    # How the release's own class is driven where an SGLang SUT carries it (backends/real_code.py);
    # None: the call-site model runs on every SUT.
    real_code: Optional[RealCode] = None
    real_code_gap: str = ""  # why a backend with a release file has no RealCode (kvh matrix)
    # Its call site commits a speculative draft's rows (Forward.commit_lens); every other call
    # site writes every token, so a scenario with a draft commit is skipped there (DRAFT_COMMIT).
    writes_draft_commits: bool = False
    # Its call site writes a decode-context-parallel rank's share (Geometry.dcp_size > 1), and
    # only that; every other call site skips those scenarios (DCP_RANK).
    writes_dcp_rank: bool = False

    @property
    def grouped(self) -> bool:
        """Whether its release code writes only on the ranks of a process group (cp: a CP
        group's, harness/sut/worker/cp_group.py), never in a SUT's one process."""
        return self.real_code is not None and self.real_code.in_group is not None

    def _release_class(self, req: WriteRequest, mode: str) -> Any:
        """The release's backend class for this (mode, pool kind), where the SUT carries it and
        its RealCode runs there; else None (the model writes)."""
        real = self.real_code
        if real is None or not real.runs_in(mode, req.pool_kind):
            return None
        return real_class(req, self.name)

    def run_write(self, req: WriteRequest, era: str, mode: str) -> Optional[str]:
        """One write: the release's own backend code where the SUT carries it (returning where it
        called the write door), else the model."""
        real, cls = self.real_code, self._release_class(req, mode)
        if cls is None:  # the model, which says what its site does when told not to save
            self.write(req, era, mode)
            return None
        if real.model_first is not None and req.save_kv_cache:
            real.model_first(req)
        return drive(real, cls, req, mode, self.mla_input)  # told to save or not, as the caller

    def prepared_write(
        self, req: WriteRequest, era: str, mode: str
    ) -> tuple[Callable[[], Any], str]:
        """The write `run_write` makes, ready to be repeated (`kvh bench`), and what it runs: the
        release's backend class where the SUT carries it (made ready once, so only its forward
        from entry to the door's return repeats), else "call-site model"."""
        real, cls = self.real_code, self._release_class(req, mode)
        if cls is None:
            return (lambda: self.write(req, era, mode)), "call-site model"
        if not req.save_kv_cache:
            return (lambda: None), real.where
        forward = prepare_forward(real, cls, req, mode, self.mla_input)
        first = real.model_first or (lambda req: None)
        return (lambda: (first(req), forward(False))[1]), real.where

    def judges(self, pool: str, dtype: str) -> bool:
        """Whether this call site's cells of `pool` pools of `dtype` are planned at all."""
        return pool in self.pool_kinds and dtype in self.kind_dtypes.get(pool, self.dtypes)

    def skip_for(self, scenario: Scenario, mode: str) -> Optional[BackendSkip]:
        """The declared skip that removes this (scenario, mode) cell, if any."""
        if (
            self.focus is not None
            and scenario.name in BUILTIN_SCENARIOS
            and scenario.name not in self.focus.get(mode, ())
        ):
            return OUT_OF_FOCUS
        if not self.writes_draft_commits and any(
            forward.commit_lens is not None for forward in scenario.forwards
        ):
            return DRAFT_COMMIT
        if (scenario.geometry.dcp_size > 1) != self.writes_dcp_rank:
            return DCP_RANK if not self.writes_dcp_rank else NOT_A_DCP_RANK
        return next((skip for skip in self.skips if skip.applies(scenario, mode)), None)

    def as_dict(self) -> dict:
        """Plain data for reports and `kvh matrix`."""
        return {
            "name": self.name,
            "device_type": self.device_type,
            "pool_kinds": list(self.pool_kinds),
            "modes": list(self.modes),
            "eras": list(self.eras),
            "dtypes": list(self.dtypes),
            "kind_dtypes": {kind: list(names) for kind, names in self.kind_dtypes.items()},
            "kind_dtypes_reason": self.kind_dtypes_reason,
            "mla_input": self.mla_input,
            "focus": (
                None
                if self.focus is None
                else {mode: list(names) for mode, names in self.focus.items()}
            ),
            "summary": self.summary,
            "divergences": [d.as_dict() for d in self.divergences],
            "skips": [skip.as_dict() for skip in self.skips],
            "order": self.order,
            "census_files": [] if self.census is None else list(self.census.files),
            "value_pools": [] if self.value_scope is None else list(self.value_scope.pools),
            "real_code": None if self.real_code is None else self.real_code.where,
            "real_code_gap": self.real_code_gap,
        }


def register_backend(
    *,
    name: str,
    order: int,
    device_type: str,
    pool_kinds: tuple[str, ...],
    modes: tuple[str, ...],
    **details: Any,
) -> Callable[[WriteFn], WriteFn]:
    """Declare the decorated write function as backend `name`, sorted by `order` in the registry;
    `details` are Backend's optional fields (eras, dtypes, skips, divergences, mla_input, focus,
    census, value_scope, real_code, real_code_gap, summary)."""

    def register(write: WriteFn) -> WriteFn:
        if hasattr(write, _ENTRY):
            raise ValueError(
                f"{write.__qualname__} already registers backend {getattr(write, _ENTRY).name!r}"
            )
        entry = Backend(name, device_type, pool_kinds, modes, write, order=order, **details)
        setattr(write, _ENTRY, entry)
        return write

    return register


def entries_of(module: ModuleType) -> tuple[Backend, ...]:
    """The entries registered by functions defined in `module`, in definition order."""
    return tuple(
        getattr(value, _ENTRY)
        for value in vars(module).values()
        # isinstance, not hasattr: an object answering every attribute (real_code.NO_ATTENTION)
        if isinstance(getattr(value, _ENTRY, None), Backend)
        and getattr(value, "__module__", None) == module.__name__
    )
