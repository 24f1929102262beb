"""Which backend call sites of a release fit the harness's model, decided once per SUT from the
release's own source (the census, harness/sut/probe/census.py).

A backend whose write calls differ from the model of the era it would run in, or that the
release does not have, is not run: a model that does not fit would blame the release for the
harness's own model. Its cells are skipped with the evidence (file, line, expression) as the
reason, and `kvh sut check` prints the whole comparison. A backend whose files the release does
not have at all cannot apply there, as a pool class it does not have: its cells are counted
apart from the skips (SkipKind.NOT_OFFERED), with that reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from harness.sut.probe.census import census
from harness.sut.probe.census_call_sites import BACKEND_MODELS
from harness.sut.probe.census_compare import compare, files_present, files_under


def unfit_call_sites(
    root: str, eras: Iterable[str], missing: frozenset[str] = frozenset()
) -> dict[tuple[str, str], str]:
    """(backend, era) -> why that call site of the release under `root` is not the model's, on a
    release without the KVWriteLoc constructors `missing` (detect.missing_constructors)."""
    release = census(Path(root))
    reasons = {}
    for name, model in BACKEND_MODELS.items():
        present = files_present(model, release)
        for era in eras:
            if not present:
                reasons[name, era] = (
                    f"the release has no {' or '.join(model.files)}: no {name} call site to check"
                )
                continue
            found = compare(release, model, era, missing)
            if found:
                more = f" (and {len(found) - 1} more: kvh sut check)" if len(found) > 1 else ""
                reasons[name, era] = (
                    f"its {name} call site is not the {era} model: {found[0].describe()}{more}"
                )
    return reasons


def absent_call_sites(root: str) -> frozenset[str]:
    """The backends none of whose files the release under `root` has."""
    return frozenset(name for name, model in BACKEND_MODELS.items() if not files_under(model, root))
