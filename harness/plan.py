"""What a run covers: options from the CLI, and the candidates they expand to per backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from backends.registry import BACKENDS, Backend
from harness.candidate import Candidate
from harness.capabilities import cell_status, layout_of
from harness.devices import device_type, natural_device, unavailable_reason
from harness.sharding import Shard
from harness.sut.call_sites import unfit_call_sites
from harness.sut.environments import is_isolated_spec, load_isolated
from harness.sut.errors import SutLoadError
from harness.sut.limits import limit_before
from harness.sut.loader import LoadedSut, load_foreign, parse_builtin
from pools.builtin import builtin_module
from pools.dtypes import DTYPES
from pools.engines import ENGINES
from pools.eras import ERAS
from pools.judge import judge_module
from pools.layouts.kinds import LAYOUT_KINDS
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
    shard: Optional[Shard] = None  # --shard i/N: only this deterministic share of the cells
    scenarios: Optional[list] = (
        None  # user scenarios (--scenario): run these instead of the builtin set
    )
    # The call sites by backend name: the registry, or a copy with a mutant's faulty call sites.
    backend_table: Mapping[str, Backend] = field(default_factory=lambda: BACKENDS)
    # Judge each era in `eras` on the baseline against the ground truth (the era table,
    # harness/verdict.py); False runs only the eras the candidates need (a mutant run).
    era_table: bool = True


@dataclass(frozen=True)
class Skip:
    """A candidate that this machine or this backend cannot run, with the reason as data."""

    sut: str
    era: str
    engine: str
    reason: str


@dataclass(frozen=True)
class SutChoice:
    spec: str
    engines: tuple[str, ...]  # builtin: the engines to run; foreign: ("-",)
    loaded: Optional[LoadedSut] = None
    # Foreign: the call conventions it runs through (its probed era, or those --era forces).
    eras: tuple[str, ...] = ()
    # Foreign: why it is not run (did not load, fits no call convention); its cells are skips.
    load_error: str = ""
    # (backend, era) -> why the release's own call site is not the model's (harness/sut/call_sites)
    unfit_sites: Mapping[tuple[str, str], str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.loaded is not None and not self.eras and self.loaded.era:
            object.__setattr__(self, "eras", (self.loaded.era,))  # the era it probes as


def load_sut(spec: str) -> LoadedSut:
    """A foreign SUT: an isolated SGLang release (its own process), or a module loaded here."""
    if is_isolated_spec(spec):
        return load_isolated(spec)
    return load_foreign(spec)


def close_suts(suts: list[SutChoice]) -> None:
    """Stop the workers of isolated SUTs (nothing is left running after a run)."""
    for sut in suts:
        _stop(sut.loaded)


def _stop(loaded: Optional[LoadedSut]) -> None:
    stop = getattr(loaded.module, "stop", None) if loaded else None
    if stop is not None:
        stop()


def _foreign_choice(spec: str, options: RunOptions) -> SutChoice:
    """Load and probe a foreign SUT; a failure is kept as the choice's load_error."""
    try:
        loaded = load_sut(spec)
    except SutLoadError as error:
        return SutChoice(spec, ("-",), load_error=str(error))
    if options.eras_named:
        eras = tuple(options.eras)
    elif loaded.era is None:
        _stop(loaded)
        return SutChoice(spec, ("-",), load_error=f"{loaded.unfit_reason}; --era forces one")
    else:
        eras = (loaded.era,)
    unfit = unfit_call_sites(loaded.root, eras) if loaded.root else {}
    return SutChoice(spec, ("-",), loaded, eras, unfit_sites=unfit)


def resolve_suts(options: RunOptions) -> list[SutChoice]:
    """Load and probe every --sut up front, so a bad one fails before anything is written. With
    several, one that does not load is kept with the reason and its cells are skipped, so one
    bad release does not stop a comparison of the others."""
    choices = []
    for spec in options.suts:
        engine = parse_builtin(spec)
        if engine is None:
            choices.append(_foreign_choice(spec, options))
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


# The baseline is the judge (pools/judge): it shares no code with the builtin pools, so their
# reference engine is a candidate like any other.
BASELINE_SUT, BASELINE_DEVICE = "judge", "cpu"


@cache
def baseline_module(era: str) -> Any:
    """The pools every candidate is judged against, for one era's call site. The one place that
    chooses them (harness/verdict.py runs them through every era's call site). Built once per era:
    the module holds only classes, and every scenario's baseline runs need them."""
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


def _missing_class(module: object, pool: Optional[str]) -> Optional[str]:
    """The SGLang class name a layout pool kind needs that a foreign SUT does not offer."""
    kind = LAYOUT_KINDS.get(pool or "")
    return None if kind is None or hasattr(module, kind.class_name) else kind.class_name


def candidates_for(
    backend: Backend,
    mode: str,
    suts: list[SutChoice],
    options: RunOptions,
    pool: Optional[str] = None,
    dtype: Optional[str] = None,
) -> Iterator[Candidate | Skip]:
    """Candidates for one backend and mode, and a Skip for each one that cannot run.

    Engines are filtered through the capability matrix (harness/capabilities.py) for the
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
            yield Skip(sut.spec, "-", "-", sut.load_error)
            continue
        if sut.loaded is not None:
            yield from _foreign_candidates(backend, mode, sut, device, device_reason, pool)
            continue
        for era in backend.eras:
            if era not in options.eras:
                continue
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
                    yield Skip("builtin", era, engine, status.reason)
                    continue
                candidate = Candidate(
                    "builtin", builtin_module(era, engine), era, engine, device, backend.name, mode
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
    missing = _missing_class(loaded.module, pool)
    limit = limit_before(loaded.capabilities, pool, device_type(device)) if pool else None
    for era in sut.eras:
        unfit = sut.unfit_sites.get((backend.name, era))
        if era not in backend.eras:
            reason = f"backend {backend.name} has no {era} call site"
        elif unfit:
            reason = unfit
        elif missing:
            reason = f"the SUT offers no {missing} for {pool} pools"
        elif limit:
            reason = f"{limit.name}: {limit.reason}"
        else:
            reason = device_reason
        if reason:
            yield Skip(sut.spec, era, "-", reason)
        else:
            yield Candidate(
                sut.spec,
                loaded.module,
                era,
                "-",
                device,
                backend.name,
                mode,
                capabilities=loaded.capabilities,
            )
