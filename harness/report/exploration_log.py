"""What a `kvh run --profile` explored: examples per cell, streamed as progress, stored as
`exploration` records, and summarised from those records per backend x pool kind."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pandas as pd

from reports.markdown import markdown_table
from reports.schema import validate_row
from scenarios.profiles import PROFILES

if TYPE_CHECKING:  # the log reads what a run measured; reports never run
    from harness.run.exploring import CellStats


class ExplorationLog:
    """Examples tried per cell: a progress line on stderr each, and one record each."""

    def __init__(self, seed: int) -> None:
        self.seed, self.cells = seed, []

    def add(self, stats: CellStats) -> None:
        self.cells.append(stats)
        rate = stats.examples / stats.seconds if stats.seconds else 0.0
        print(
            f"kvh: [{len(self.cells)}] {stats.cell.key}: {stats.examples} examples + "
            f"{stats.regressions} regressions + {stats.reach} reach, "
            f"{stats.seconds:.1f}s ({rate:.2f} examples/s)"
            + (f", FAILED (seed {self.seed}, {stats.blob})" if stats.failed else ""),
            file=sys.stderr,
        )

    def rows(self) -> list[dict]:
        """`exploration` records (reports/schema.py), one per cell explored."""
        return [
            validate_row(
                "exploration",
                {
                    "pool": stats.cell.pool,
                    "dtype": stats.cell.dtype,
                    "backend": stats.cell.backend.name,
                    "mode": stats.cell.mode,
                    "examples": stats.examples,
                    "regressions": stats.regressions,
                    "reach": stats.reach,
                    "seconds": stats.seconds,
                    "failed": stats.failed,
                    "blob": stats.blob,
                },
            )
            for stats in self.cells
        ]


def exploration_markdown(rows: pd.DataFrame, profile: str, seed: int) -> str:
    """The summary's exploration section from `exploration` records, in the order they come."""
    records = rows.to_dict("records")
    totals: dict[tuple[str, str], list] = {}
    for row in records:
        total = totals.setdefault((row["backend"], row["pool"]), [0, 0, 0, 0.0])
        total[0] += int(row["examples"])
        total[1] += int(row["regressions"])
        total[2] += int(row["reach"])
        total[3] += float(row["seconds"])
    examples = sum(int(row["examples"]) for row in records)
    seconds = sum(float(row["seconds"]) for row in records)
    table = pd.DataFrame(
        [
            {
                "backend": backend,
                "pool": pool,
                "examples": count,
                "regressions": regressions,
                "reach": reach,
                "seconds": f"{spent:.1f}",
                "examples/s": f"{count / spent if spent else 0.0:.2f}",
            }
            for (backend, pool), (count, regressions, reach, spent) in totals.items()
        ]
    )
    return (
        "\n".join(
            [
                f"## Exploration: profile {profile}, seed {seed}",
                "",
                f"{examples} Hypothesis examples in {seconds:.1f}s: "
                f"{examples / seconds if seconds else 0.0:.2f} examples/s "
                "(each example runs the baseline and every candidate)" + _overran(profile, seconds),
                "",
                markdown_table(table, empty="(no cells explored)"),
            ]
        )
        + "\n"
    )


def _overran(profile: str, seconds: float) -> str:
    """Where a profile of fixed examples ran past the time it is sized for, said: its cells drew
    every example anyway, so a slower machine or SUT took longer instead of checking less."""
    known = PROFILES.get(profile)
    if known is None or not known.fixed_examples or not known.run_seconds:
        return ""
    if seconds <= known.run_seconds:
        return ""
    return (
        f"; {profile} is sized for {known.run_seconds:.0f}s of exploration on a 2-core machine, "
        "and its examples are fixed: this machine or SUT took longer rather than checking less"
    )
