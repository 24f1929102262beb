"""What a `kvh run --profile` explored: examples per cell, streamed and summarised."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pandas as pd

from reports.markdown import markdown_table

if TYPE_CHECKING:  # the log reads what a run measured; reports never run
    from harness.run.exploring import CellStats


class ExplorationLog:
    """Examples tried per cell, streamed as progress and summarised per backend x pool kind."""

    def __init__(self, profile: str, seed: int) -> None:
        self.profile, self.seed, self.cells = profile, seed, []

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

    def markdown(self) -> str:
        totals: dict[tuple[str, str], list] = {}
        for stats in self.cells:
            row = totals.setdefault((stats.cell.backend.name, stats.cell.pool), [0, 0, 0, 0.0])
            row[0] += stats.examples
            row[1] += stats.regressions
            row[2] += stats.reach
            row[3] += stats.seconds
        examples = sum(stats.examples for stats in self.cells)
        seconds = sum(stats.seconds for stats in self.cells)
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
                    f"## Exploration: profile {self.profile}, seed {self.seed}",
                    "",
                    f"{examples} Hypothesis examples in {seconds:.1f}s: "
                    f"{examples / seconds if seconds else 0.0:.2f} examples/s "
                    "(each example runs the baseline and every candidate)",
                    "",
                    markdown_table(table, empty="(no cells explored)"),
                ]
            )
            + "\n"
        )
