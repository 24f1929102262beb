"""What `kvh run` and `kvh bench` say about each foreign SUT before they start: the era its
capabilities probe as (or the forced call conventions), the capabilities, and which of its own
call sites fit the model; and the `sut` record a run stores of each (reports/schema.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Optional

from backends.registry import BACKENDS
from harness.plan.sut_choice import SutChoice
from harness.sut.load.loader import LoadedSut
from harness.sut.load.optional_pools import offered_classes
from harness.sut.probe.census_call_sites import BACKEND_MODELS
from harness.sut.probe.detect import describe, missing_constructors
from harness.sut.probe.write_doors import Door, counts, cpu_count, driven_count, write_doors


@cache  # a release's source does not change during a run: read its doors once
def _doors(root: str, offered: Optional[tuple[str, ...]] = None) -> tuple[Door, ...]:
    """Its doors, driven where the loaded SUT offers the classes (`offered`; None: what its
    source says the loader would offer)."""
    return tuple(write_doors(Path(root), offered or offered_classes(Path(root))))


def _offered_to_every_kind(loaded: LoadedSut) -> Optional[tuple[str, ...]]:
    """The classes its loader offers, and of those it did not try (no pool kind of the run
    asked for them) the ones its source says it would: its doors driven are the SUT's, whatever
    kinds the run plans."""
    if not loaded.untried or loaded.offered is None:
        return loaded.offered
    by_source = offered_classes(Path(loaded.root))
    return tuple(sorted({*loaded.offered, *(c for c in loaded.untried if c in by_source)}))


def sut_record(sut: SutChoice) -> Optional[dict]:
    """The `sut` row of a loaded foreign SUT: version, era, the backends its own release code
    runs and those that ran as their model with why, and its write doors driven of all (None for
    a SUT that did not load)."""
    loaded = sut.loaded
    if loaded is None:
        return None
    doors = _doors(loaded.root, _offered_to_every_kind(loaded)) if loaded.root else ()
    driven, total = counts(doors) if doors else (None, None)
    return {
        "sut": sut.spec,
        "version": loaded.version or "",
        "era": loaded.era or "",
        "real_code": ",".join(loaded.real_code),
        # Each backend whose release class exists but did not import, and so ran as its model.
        "real_code_missing": "; ".join(f"{name}: {why}" for name, why in loaded.real_code_missing),
        "write_doors_driven": driven,
        "write_doors": total,
    }


def describe_sut(sut: SutChoice) -> list[str]:
    if sut.load_error:
        return [f"{sut.load_error}: its cells are skipped"]
    loaded = sut.loaded
    if loaded is None:
        return []
    version = f", version {loaded.version}" if loaded.version else ""
    if sut.eras == (loaded.era,):
        head = f"SUT {sut.spec}: era {loaded.era} (from its capabilities{version})"
    else:
        head = (
            f"SUT {sut.spec}: call conventions {', '.join(sut.eras)} forced by --era "
            f"(its capabilities: {loaded.era or 'none fits'}{version})"
        )
    lines = [head]
    direct = sorted(missing_constructors(loaded.capabilities))
    if direct and "current" in sut.eras:
        lines.append(
            f"  composed: the current pools, with no KVWriteLoc.{'/'.join(direct)}: its call "
            "sites build KVWriteLoc directly (backends/era_calls.py has_constructor)"
        )
    if loaded.capabilities is not None:
        lines.append("  " + "; ".join(describe(loaded.capabilities)[:-1]))
    grouped = {n for n in loaded.real_code if BACKENDS[n].grouped}
    if loaded.real_code:
        runs = [
            n + (" (on a CP group)" if n in grouped else "")
            for n in loaded.real_code
            if n not in grouped or not loaded.no_cp_write
        ]
        lines.append(f"  real code run: {', '.join(runs)} (backends/real_code.py)")
    for backend, why in loaded.real_code_missing:
        lines.append(f"  {backend} runs as the model: {why}")
    if grouped and loaded.no_cp_write:
        lines.append(f"  {', '.join(sorted(grouped))} runs as the model: {loaded.no_cp_write}")
    if not loaded.root:
        lines.append("  no package source to check its call sites against: they run as modelled")
        return lines
    doors = _doors(loaded.root, _offered_to_every_kind(loaded))
    lines.append(f"  {driven_count(doors)}, {cpu_count(doors)} (kvh sut check lists them)")
    total = len(BACKEND_MODELS) * len(sut.eras)
    lines.append(
        f"  call sites read from {loaded.root}: {total - len(sut.unfit_sites)} of {total} fit "
        "the model" + (":" if sut.unfit_sites else "")
    )
    for (backend, era), reason in sorted(sut.unfit_sites.items()):
        judged = backend in loaded.real_code
        how = "its release code is judged instead" if judged else "skipped"
        lines.append(f"    {backend} ({era}), {how}: {reason}")
    return lines
