"""The release table of docs/bench.md: from a `kvh bench` of several releases, the host time of
one write call per release, and each release's ratio to the first --sut with its 95% CI.

Run: .venv/bin/python scripts/release_table.py RESULTS_DIR [RUN_ID]  (default: the newest run)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from reports.store import load


def _version(spec: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", spec))


def _cell(row) -> str:
    text = f"{row.call_us:.1f}"
    if pd.notna(row.sut_ratio):
        text += f" ×{row.sut_ratio:.3f} [{row.sut_ratio_ci_low:.3f}, {row.sut_ratio_ci_high:.3f}]"
    return text


def release_table(rows: pd.DataFrame) -> str:
    measured = rows[rows.outcome == "measured"]
    suts = sorted(measured.sut.unique(), key=_version)
    lines = [
        "| backend:mode | pool | tokens | " + " | ".join(suts) + " |",
        "|---|---|---|" + "---|" * len(suts),
    ]
    keys = ["backend", "mode", "pool", "tokens"]
    for (backend, mode, pool, tokens), cells in measured.groupby(keys, sort=True):
        by_sut = {row.sut: _cell(row) for row in cells.itertuples()}
        values = " | ".join(by_sut.get(sut, "") for sut in suts)
        lines.append(f"| {backend}:{mode} | {pool} | {tokens} | {values} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("run_id", nargs="?")
    arguments = parser.parse_args()
    rows = load(arguments.results).of("bench")
    run_id = arguments.run_id or rows.sort_values("time").run_id.iloc[-1]
    print(release_table(rows[rows.run_id == run_id]))


if __name__ == "__main__":
    main()
