"""The summary's lines for the known divergences a run reproduced: each declared divergence once,
with its kind, eras and PR or evidence, and the eras and cells that reproduced it, read from the
stored rows (which name the divergences; the declarations say the rest)."""

from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd

from backends.divergences import DIVERGENCES, KnownDivergence
from backends.registry import Backend
from harness.compare.verdict import divergences_of
from reports.outcome import Outcome
from reports.records import text_of


def divergence_line(
    name: str, divergence: Optional[KnownDivergence], eras: set[str], where: set[str]
) -> str:
    """`divergence` None: a row names a divergence this checkout no longer declares."""
    reproduced = f"reproduced in era {', '.join(sorted(eras))} on {', '.join(sorted(where))}"
    if divergence is None:
        return f"`{name}` (not declared in this checkout), {reproduced}"
    return (
        f"`{divergence.name}` ({divergence.kind}; eras {', '.join(divergence.eras)}; "
        f"{divergence.source}), {reproduced}: {divergence.reason}"
    )


def _declared(backend: Optional[Backend]) -> dict[str, KnownDivergence]:
    """The declarations that can explain a row of `backend`'s cells, by name."""
    return {d.name: d for d in (divergences_of(backend) if backend else DIVERGENCES)}


def reproduced(rows: pd.DataFrame, backends: Mapping[str, Backend]) -> list[str]:
    """One line per declared divergence a known-divergence row of `rows` reproduced, in the order
    the rows first reproduced them; `backends` holds the call-site entries the run used."""
    seen: dict[str, tuple[Optional[KnownDivergence], set[str], set[str]]] = {}
    if rows.empty:
        return []
    for row in rows[rows["outcome"] == Outcome.KNOWN_DIVERGENCE.value].to_dict("records"):
        declared = _declared(backends.get(row["backend"]))
        for name in filter(None, text_of(row.get("divergence")).split(",")):
            _, eras, where = seen.setdefault(name, (declared.get(name), set(), set()))
            eras.add(row["era"])
            where.add(f"{row['backend']}:{row['mode']}/{row['pool']}")
    return [divergence_line(name, *entry) for name, entry in seen.items()]
