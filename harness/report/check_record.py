"""One result row as a `check` record of the results store (reports/schema.py): everything the
run's summary says of it is in the record, so a summary read back from the store (a --jobs
parent's) says what the run said."""

from __future__ import annotations

from harness.report.cell_result import CellResult
from reports.outcome import Outcome
from reports.schema import validate_row


def _detail(result: CellResult) -> str:
    """The first finding, the skip's reason, or the divergences reproduced with PR or evidence;
    then, where the release's own code ran over a call site the census finds changed, what the
    census saw."""
    evidence = getattr(result.subject, "census_evidence", "")
    census = f" [release code judged; census: {evidence}]" if evidence else ""
    if result.findings and result.outcome is not Outcome.KNOWN_DIVERGENCE:
        return result.findings[0].headline() + census
    if result.skip is not None:
        return result.skip.reason
    return "; ".join(f"{d.name} ({d.kind}, {d.source})" for d in result.divergences) + census


def record_of(result: CellResult) -> dict:
    """One `check` row; run metadata is stamped by the store, the repro path set by the run once
    the repro file is written."""
    subject = result.subject
    source = subject or result.skip  # a skip decided before any candidate names its cell itself
    scenario = result.scenario
    return validate_row(
        "check",
        {
            "sut": source.sut,
            "device": subject.device if subject else "",
            "backend": source.backend,
            "mode": source.mode,
            "pool": result.pool,
            "era": source.era,
            "engine": source.engine,
            "dtype": result.dtype,
            "scenario": scenario.name if scenario else "(hypothesis)",
            "tokens": sum(f.tokens for f in scenario.forwards) if scenario else 0,
            "outcome": str(result.outcome),
            "findings": len(result.findings),
            "divergence": ",".join(d.name for d in result.divergences),
            "divergence_pr": ",".join(d.pr or "no PR" for d in result.divergences),
            "divergence_evidence": " | ".join(d.evidence for d in result.divergences if d.evidence),
            "write_ns": result.write_ns,
            "bytes_moved": None,
            "detail": _detail(result),
            "repro": None,
            "label": result.label,
            "reproduce": result.reproduce,
            "skip_kind": str(result.skip.kind) if result.skip is not None else "",
            "release_functions": "; ".join(result.release_trail),
        },
    )
