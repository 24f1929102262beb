"""Where a run's summary goes: `summary-<run id>.md`, its own, and `summary.md`, a copy of the
latest. Two runs into one --out each keep their own summary (the results store already keeps
both runs' records), and `summary.md` stays where a person or a CI step looks first."""

from __future__ import annotations

import re
from pathlib import Path

from reports.atomic import write_text_atomic

LATEST = "summary.md"


def run_summary_path(out: Path, run_id: str) -> Path:
    """The summary file of run `run_id` in `out` (the id made safe for a file name)."""
    return Path(out) / f"summary-{re.sub(r'[^A-Za-z0-9._-]', '_', run_id)}.md"


def write_run_summary(out: Path, run_id: str, markdown: str) -> Path:
    """Write the run's own summary, then `summary.md` as a copy of it, each atomically (a
    concurrent run's `summary.md` is replaced whole, never mixed); the run's own file."""
    own = write_text_atomic(run_summary_path(out, run_id), markdown)
    write_text_atomic(Path(out) / LATEST, markdown)
    return own
