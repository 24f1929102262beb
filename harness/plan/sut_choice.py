"""The systems under test a run loads: each --sut resolved to a builtin engine list or a loaded
foreign module (in process or in its own worker), and stopped again at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, Optional

from backends.registry import BACKENDS
from harness.plan.run_options import RunOptions
from harness.sut.load.environments import (
    checked_out,
    ensure_installed,
    is_isolated_spec,
    load_in_worker,
    load_isolated,
    load_isolated_here,
)
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import LoadedSut, load_foreign, parse_builtin
from harness.sut.load.release_index import (
    ReleaseIndexError,
    index_versions,
    release_range,
    releases_in,
)
from harness.sut.probe.call_sites import absent_call_sites, unfit_call_sites
from harness.sut.probe.detect import missing_constructors
from pools.builtin.engines import ENGINES

if TYPE_CHECKING:
    from harness.sut.worker.client import IsolatedSut


@dataclass(frozen=True)
class SutChoice:
    spec: str
    engines: tuple[str, ...]  # builtin: the engines to run; foreign: ("-",)
    loaded: Optional[LoadedSut] = None
    # Foreign: the call conventions it runs through (its probed era, or those --era forces).
    eras: tuple[str, ...] = ()
    # Foreign: why it is not run (did not load, fits no call convention); its cells are skips.
    load_error: str = ""
    # (backend, era) -> why the release's own call site is not the model's
    # (harness/sut/probe/call_sites.py)
    unfit_sites: Mapping[tuple[str, str], str] = field(default_factory=dict, compare=False)
    # Foreign: the backends the release has no file of (its cells cannot apply).
    absent_sites: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.loaded is not None and not self.eras and self.loaded.era:
            object.__setattr__(self, "eras", (self.loaded.era,))  # the era it probes as


def load_sut(
    spec: str,
    in_process: bool = False,
    started: Optional[IsolatedSut] = None,
    release_in_process: bool = False,
    coverage: Optional[Path] = None,
    kinds: Optional[list[str]] = None,
) -> LoadedSut:
    """A foreign SUT in a worker process of its own: an installed SGLang release, or a user's
    module or file, so that whatever it does (exit, crash, hang, KeyboardInterrupt) is a
    finding or a limit, never kvh's exit code. `in_process` loads a module or file here
    instead (`kvh run --in-process`, for a debugger), and `release_in_process` a release.
    `started`: its worker, started already. `kinds`: the pool kinds the run plans (None: every
    kind), which a release's loader tries its optional pools for."""
    if is_isolated_spec(spec):
        if release_in_process:
            return load_isolated_here(spec, kinds)
        return load_isolated(spec, coverage, kinds)
    if in_process:
        return load_foreign(spec, kinds=kinds)
    return load_in_worker(spec, started, coverage, kinds)


def close_suts(suts: list[SutChoice]) -> None:
    """Stop the workers of isolated SUTs (nothing is left running after a run)."""
    for sut in suts:
        stop_loaded(sut.loaded)


def stop_loaded(loaded: Optional[LoadedSut]) -> None:
    """Stop a loaded SUT's worker and CP group, where it has them."""
    stop = getattr(loaded.module, "stop", None) if loaded else None
    if stop is not None:
        stop()
    if loaded is not None and loaded.cp_group is not None:
        loaded.cp_group.stop()


def with_cp_group(
    loaded: LoadedSut,
    spec: str,
    world: int = 0,
    coverage: Optional[Path] = None,
    kinds: Optional[list[str]] = None,
) -> LoadedSut:
    """An installed release with the CP group of `world` ranks its context-parallel cells run on
    (not started; harness/sut/worker/cp_group.py); as it was where `world` < 2, or where it is
    no release or offers no CP write to drive (its cp cells then run the model in its worker)."""
    if world < 2 or not is_isolated_spec(spec) or not loaded.root or loaded.no_cp_write:
        return loaded
    from harness.sut.worker.cp_group import CpGroup

    folder = None if coverage is None else str(coverage.resolve())
    # Its ranks load only the pool kinds a grouped write serves: a release's loader tries its
    # optional pools for the kinds it is told, and the cp cells need none of them.
    served = {
        kind for backend in BACKENDS.values() if backend.grouped for kind in backend.pool_kinds
    }
    planned = sorted(served if kinds is None else served & set(kinds))
    return replace(loaded, cp_group=CpGroup(loaded.root, world, folder, planned))


def candidate_module(loaded: LoadedSut, backend: str) -> tuple[Any, bool]:
    """Where a candidate of `backend` executes (its module, and whether that is a worker): the
    CP group for a write the release makes only inside a process group, else the SUT's own."""
    if loaded.cp_group is not None and backend in BACKENDS and BACKENDS[backend].grouped:
        return loaded.cp_group, True
    return loaded.module, loaded.in_worker


def _foreign_choice(
    spec: str, options: RunOptions, started: Optional[IsolatedSut] = None
) -> SutChoice:
    """Load and probe a foreign SUT; a failure is kept as the choice's load_error."""
    try:
        loaded = load_sut(
            spec,
            options.in_process,
            started,
            options.release_in_process,
            options.coverage,
            options.planned_kinds,
        )
    except SutLoadError as error:
        return SutChoice(spec, ("-",), load_error=str(error))
    loaded = with_cp_group(loaded, spec, options.cp_world, options.coverage, options.planned_kinds)
    if options.eras_named:
        eras = tuple(options.eras)
    elif loaded.era is None:
        stop_loaded(loaded)
        return SutChoice(spec, ("-",), load_error=f"{loaded.unfit_reason}; --era forces one")
    else:
        eras = (loaded.era,)
    missing = missing_constructors(loaded.capabilities)
    if not loaded.root:
        return SutChoice(spec, ("-",), loaded, eras)
    unfit = unfit_call_sites(loaded.root, eras, missing)
    absent = absent_call_sites(loaded.root)
    return SutChoice(spec, ("-",), loaded, eras, unfit_sites=unfit, absent_sites=absent)


def _releases_of(spec: str) -> list[tuple[str, str]]:
    """(spec, "") for a named SUT (a commit's canonical spec, its package checked out); for a
    range of releases (`sglang>=0.5.12,<0.5.24`) each release of the index it admits, installed
    first where it is not, with why it cannot run ("" when it can), so that one that does not
    install is a skip beside the others' results."""
    specifier = release_range(spec)
    if specifier is None:  # a commit is named by its full SHA, so its repro replays that commit
        return [(checked_out(spec), "")]
    try:
        releases = releases_in(specifier, index_versions())
    except ReleaseIndexError as error:
        raise ValueError(f"--sut {spec}: {error}") from None
    if not releases:
        raise ValueError(f"--sut {spec}: no release on the package index matches")
    return [(release, ensure_installed(release)) for release in releases]


def resolve_suts(
    options: RunOptions, started: Mapping[str, IsolatedSut] = MappingProxyType({})
) -> list[SutChoice]:
    """Load and probe every --sut up front, so a bad one fails before anything is written. With
    several, one that does not load is kept with the reason and its cells are skipped, so one
    bad release does not stop a comparison of the others. `started`: workers of user SUTs
    started already, by spec (harness.sut.load.environments.start_user_workers)."""
    choices = []
    for spec, not_installed in [one for named in options.suts for one in _releases_of(named)]:
        engine = parse_builtin(spec)
        if not_installed:
            choices.append(SutChoice(spec, ("-",), load_error=f"{spec}: {not_installed}"))
        elif engine is None:
            choices.append(_foreign_choice(spec, options, started.get(spec)))
        elif engine:
            if engine not in ENGINES:
                raise ValueError(
                    f"unknown engine {engine!r} in --sut {spec}; choose from {', '.join(ENGINES)}"
                )
            choices.append(SutChoice(spec, (engine,)))
        else:
            choices.append(SutChoice(spec, tuple(options.engines)))
    if len(choices) == 1 and choices[0].load_error:
        raise SutLoadError(choices[0].load_error)
    return choices
