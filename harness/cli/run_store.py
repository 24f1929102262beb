"""What `kvh run` appends to its results store: the checks, the coverage, the exploration log,
the SUTs that did not run and those that did; and what the run's summary reads back of them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from harness.plan.sut_choice import SutChoice
    from harness.report.coverage import Coverage
    from harness.report.exploration_log import ExplorationLog
    from harness.report.run_summary import StoredRun


def store_run(
    out: Path,
    meta: dict,
    rows: list[dict],
    coverage: Coverage,
    log: Optional[ExplorationLog],
    suts: list[SutChoice],
    door_lines: Optional[dict[str, dict[str, int]]] = None,
) -> tuple[StoredRun, Path]:
    """Append the run's records to the store at `out`: what its summary reads of them, and the
    check file's path. `door_lines`: each measured SUT's write-door line counts (--coverage),
    added to its `sut` row."""
    from harness.cli.suts import sut_record
    from harness.report.run_summary import StoredRun
    from reports.records import records_frame
    from reports.store import append

    checks = records_frame("check", rows)
    results_path = append(out, checks, "check", meta)
    covered = records_frame("coverage", coverage.rows())
    append(out, covered, "coverage", meta)
    explored = None if log is None else records_frame("exploration", log.rows())
    if explored is not None and len(explored):
        append(out, explored, "exploration", meta)
    not_run = [{"sut": sut.spec, "reason": sut.load_error} for sut in suts if sut.load_error]
    if not_run:
        append(out, records_frame("not-run", not_run), "not-run", meta)
    loaded = [
        {**record, **(door_lines or {}).get(record["sut"], {})}
        for record in map(sut_record, suts)
        if record is not None
    ]
    if loaded:
        append(out, records_frame("sut", loaded), "sut", meta)
    stored = StoredRun(
        meta,
        checks.assign(source=str(results_path)),
        covered,
        explored,
        tuple(row["reason"] for row in not_run),
        tuple(loaded),
    )
    return stored, results_path
