"""The candidates of one cell: each chosen SUT and engine through the cell's backend call site,
on its device, or the skip that says why it cannot run there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Iterator, Optional

from backends.registry import Backend
from harness.plan.baseline import is_baseline
from harness.plan.candidate import Candidate
from harness.plan.devices import device_type, natural_device, unavailable_reason
from harness.plan.engine_matrix import cell_status, layout_of
from harness.plan.run_options import RunOptions
from harness.plan.sut_choice import SutChoice, candidate_module
from harness.sut.load.loader import LoadedSut
from harness.sut.probe.limits import limit_before
from pools.builtin.layouts.kinds import class_name_of, served_eras
from pools.builtin.sut import builtin_module
from reports.check_label import check_label
from reports.outcome import SkipKind


@dataclass(frozen=True)
class Skip:
    """A candidate that this machine or this backend cannot run, with the reason as data. It
    names its cell's backend and mode, so that its stored row says where it was skipped."""

    sut: str
    era: str
    engine: str
    backend: str
    mode: str
    reason: str
    # Whether the verdict counts it as a check (reports/outcome.py): as its declaration says.
    kind: SkipKind = SkipKind.SKIPPED

    @classmethod
    def of(cls, candidate: Candidate, reason: str, kind: SkipKind = SkipKind.SKIPPED) -> Skip:
        """A candidate that was planned and then not checked (a declared skip, say)."""
        return cls(
            candidate.sut,
            candidate.era,
            candidate.engine,
            candidate.backend,
            candidate.mode,
            reason,
            kind,
        )

    @property
    def label(self) -> str:
        return check_label(self.sut, self.era, self.engine, self.backend, self.mode)


def device_for(backend: Backend, options: RunOptions) -> str:
    """--device overrides; otherwise the backend's natural device (registry) when this machine has
    it, else the CPU: a call site's logic is the same on every device, so it is still checked."""
    if options.device:
        return options.device
    natural = natural_device(backend.device_type)
    return natural if unavailable_reason(natural) is None else "cpu"


def _engines_named(options: RunOptions, sut: SutChoice) -> bool:
    """Whether the user named the engines to run (--engine, or --sut builtin:ENGINE)."""
    return sut.spec != "builtin" or options.engines_named


def _missing_class(loaded: LoadedSut, pool: Optional[str]) -> Optional[str]:
    """The SGLang class name a pool kind needs that a foreign SUT does not offer."""
    if not pool:
        return None
    name = class_name_of(pool)
    return None if loaded.offers(name) else name


# One builtin module per era and engine for the process, as the baseline's (plan/baseline.py):
# making one builds some thirty classes (0.9 s of a default run's 1,682 candidates), and the
# pool cache lends an idle pool only to the module that built it.
_builtin = cache(builtin_module)


def candidates_for(
    backend: Backend,
    mode: str,
    suts: list[SutChoice],
    options: RunOptions,
    pool: Optional[str] = None,
    dtype: Optional[str] = None,
) -> Iterator[Candidate | Skip]:
    """Candidates for one backend and mode, and a Skip for each one that could apply but cannot
    run here. A combination that cannot apply (an era whose call sites a pool kind does not
    serve, or that the backend has no call site of) is neither: it is not planned.

    Engines are filtered through the capability matrix (harness/plan/engine_matrix.py) for the
    device, and for `pool` and `dtype` when the caller passes them. An opt-in engine
    (interpreted Triton on CPU) is left out unless named; the matrix says why.
    """
    device = device_for(backend, options)
    try:
        device_reason = unavailable_reason(device)
    except ValueError as error:
        device_reason = str(error)
    for sut in suts:
        if sut.load_error:
            yield Skip(sut.spec, "-", "-", backend.name, mode, sut.load_error)
            continue
        if sut.loaded is not None:
            yield from _foreign_candidates(backend, mode, sut, device, device_reason, pool)
            continue
        in_order = tuple(era for era in backend.eras if era in options.eras)
        for era in _applicable(backend, pool, in_order):
            for engine in sut.engines:
                # An engine that is opt-in on this device (interpreted Triton on CPU) is left out
                # unless named, together with every skip it would otherwise report.
                generic = cell_status(engine, "*", "*", "*", device_type(device), device_reason)
                if generic.status == "opt-in" and not _engines_named(options, sut):
                    continue
                status = cell_status(
                    engine,
                    pool or "*",
                    dtype or "*",
                    layout_of(pool) if pool else "*",
                    device_type(device),
                    device_reason,
                )
                if status.status == "opt-in" and not _engines_named(options, sut):
                    continue
                if status.status == "skipped":
                    yield Skip("builtin", era, engine, backend.name, mode, status.reason)
                    continue
                candidate = Candidate(
                    "builtin", _builtin(era, engine), era, engine, device, backend.name, mode
                )
                if not is_baseline(candidate):
                    yield candidate


def _foreign_candidates(
    backend: Backend,
    mode: str,
    sut: SutChoice,
    device: str,
    device_reason: Optional[str],
    pool: Optional[str],
) -> Iterator[Candidate | Skip]:
    """A foreign SUT through each of its call conventions, unless its capabilities, its own
    call site or this machine rule the cell out (each a Skip with the reason)."""
    loaded = sut.loaded
    missing = _missing_class(loaded, pool)
    limit = (
        limit_before(loaded.capabilities, pool, device_type(device), backend.name) if pool else None
    )
    real_code = backend.name in loaded.real_code and _real_code_runs(backend, mode, pool)
    # The release's own code speaks its own convention whatever --era forces: it is judged
    # against the model of the era its capabilities probe as.
    eras = (loaded.era,) if real_code and loaded.era else sut.eras
    for era in _applicable(backend, pool, eras):
        # What the census saw, under this era or under one --era forced, is evidence too.
        unfit = next(
            (
                sut.unfit_sites[backend.name, seen]
                for seen in (era, *(sut.eras if real_code else ()))
                if (backend.name, seen) in sut.unfit_sites
            ),
            None,
        )
        kind = SkipKind.SKIPPED
        if unfit and not real_code:
            reason = unfit
            if backend.name in sut.absent_sites:  # no file of it: cannot apply, as a pool class
                kind = SkipKind.NOT_OFFERED
        elif missing:
            kind, why = _why_missing(loaded, missing)
            reason = f"the SUT offers no {missing} for {pool} pools" + (f" ({why})" if why else "")
        elif limit:
            reason = f"{limit.name}: {limit.reason}"
            kind = SkipKind.NOT_OFFERED if limit.cannot_apply else SkipKind.SKIPPED
        else:
            reason = device_reason
        if reason:
            yield Skip(sut.spec, era, "-", backend.name, mode, reason, kind)
        else:
            module, in_worker = candidate_module(loaded, backend.name)
            yield Candidate(
                sut.spec,
                module,
                era,
                "-",
                device,
                backend.name,
                mode,
                capabilities=loaded.capabilities,
                in_worker=in_worker,
                census_evidence=unfit or "",
            )


def _why_missing(loaded: LoadedSut, name: str) -> tuple[SkipKind, str]:
    """Whether a pool class the SUT does not offer is a skip or cannot apply, and why. A user's
    module offers what it defines: a class it lacks cannot apply. A release may have a class the
    loader cannot offer here (an NPU pool, a class that does not construct): a skip, unless the
    loader found the release does not have it (LoadedSut.absent)."""
    unoffered, absent = dict(loaded.unoffered), dict(loaded.absent)
    if name in absent:
        return SkipKind.NOT_OFFERED, absent[name]
    if name in unoffered or loaded.root is not None:  # root: a release's package folder
        return SkipKind.SKIPPED, unoffered.get(name, "")
    return SkipKind.NOT_OFFERED, ""


def _applicable(backend: Backend, pool: Optional[str], eras: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `eras` the backend has a call site of and a `pool` pool serves
    (its record, pools/kinds/ PoolKind.eras), in their order."""
    served = served_eras(pool, backend.eras) if pool else backend.eras
    return tuple(era for era in eras if era in served)


def _real_code_runs(backend: Backend, mode: str, pool: Optional[str]) -> bool:
    """Whether the release's own code writes this backend's `mode` cells of `pool` pools: then a
    call site the census finds changed is judged by its bytes instead of skipped."""
    return backend.real_code is not None and backend.real_code.runs_in(mode, pool or "")
