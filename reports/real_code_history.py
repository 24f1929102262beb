"""Release code that stops running: a backend that ran as a SUT's own release code in its
previous run of the same version and does not in its newest run. `kvh report` flags it as it
flags a throughput regression: a backend that fell back to its call-site model (a dependency that
no longer imports here, a stand-in that stopped fitting, a driver gap) judges the release through
the harness's model instead of the release's code, and that must not pass quietly.

Keyed on the SUT and its version: another release may have fewer backend files (0.5.23 has no
cutlass_mla), which is not a loss."""

from __future__ import annotations

import pandas as pd

from reports.summary import release_code_of

COLUMNS = ["sut", "version", "lost", "kept", "previous_run", "latest_run"]


def real_code_drops(sut_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per SUT and version whose newest run runs fewer of the backends its previous run
    ran as release code: `lost` those backends (comma-separated), `kept` how many still run."""
    drops: list[dict] = []
    if sut_rows.empty or "real_code" not in sut_rows:
        return pd.DataFrame(columns=COLUMNS)
    ordered = sut_rows.sort_values(["time", "run_id"], kind="mergesort")
    for (sut, version), rows in ordered.groupby(["sut", "version"], sort=True, dropna=False):
        runs = rows.groupby("run_id", sort=False).tail(1)  # one row a run, in time order
        if len(runs) < 2:
            continue
        previous, latest = runs.iloc[-2], runs.iloc[-1]
        lost = sorted(set(release_code_of(previous)) - set(release_code_of(latest)))
        if lost:
            drops.append(
                {
                    "sut": str(sut),
                    "version": str(version),
                    "lost": ", ".join(lost),
                    "kept": len(release_code_of(latest)),
                    "previous_run": str(previous["run_id"]),
                    "latest_run": str(latest["run_id"]),
                }
            )
    return pd.DataFrame(drops, columns=COLUMNS)


def drop_line(row: dict) -> str:
    """One drop, as the summary and the dashboard say it."""
    return (
        f"{row['sut']} {row['version']}: {row['lost']} no longer ran as release code in run "
        f"{row['latest_run']} ({row['kept']} still did; all ran in run {row['previous_run']})"
    )
