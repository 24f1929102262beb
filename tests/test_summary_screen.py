"""summary.md's first screen (reports/summary_screen.py): the verdict in the first 5 lines, at
most 30 lines before any table however many findings and reasons a run has, the findings grouped
with a repro command each, the top skip reasons, and rows left out by design counted apart."""

from __future__ import annotations

from pathlib import Path

from backends.registry import BACKENDS
from harness.report.run_summary import StoredRun, run_summary
from reports.records import records_frame
from reports.store import run_meta
from reports.summary import RunningCounts, counts_line, rows_counts_line

ROW = {
    "sut": "builtin", "device": "cpu", "backend": "plain", "mode": "extend", "pool": "mha",
    "era": "current", "engine": "torch", "dtype": "bf16", "scenario": "prefill",
    "outcome": "pass", "label": "builtin/current/torch/plain:extend@cpu", "tokens": 4,
}  # fmt: skip


def _summary(rows: list[dict]):
    checks = records_frame("check", [dict(ROW, **row) for row in rows])
    stored = checks.assign(source=str(Path("results") / "check-x.parquet"))
    run = StoredRun(run_meta("cpu", 0), stored, records_frame("coverage", []))
    return run_summary(run, BACKENDS, Path("results/summary.md"))


def _before_table(markdown: str) -> list[str]:
    lines = markdown.splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("|"))]


def _finding(n: int, pool: str = "mha") -> dict:
    return {
        "outcome": "finding",
        "pool": pool,
        "detail": f"[bytes] written bytes differ at buffer L{n}.k, slot {n}: expected bf16 "
        f"0x3F{n:02X} ({n}), wrote 0x40{n:02X} ({2 * n})",
        "repro": f"repros/{pool}-{n}.json",
        "tokens": 10 - n % 10,
    }


def test_the_verdict_what_ran_findings_and_reasons_come_before_any_table():
    rows = [
        *[{"scenario": f"s{i}"} for i in range(5)],
        *[_finding(n) for n in range(1, 4)],
        {
            "outcome": "skipped",
            "detail": "no-cross-attention: no encoder loc",
            "skip_kind": "skipped",
        },
        *[
            {"outcome": "skipped", "detail": "out-of-focus: small set", "skip_kind": "by_design"}
            for _ in range(7)
        ],
    ]
    markdown = _summary(rows).markdown
    head = _before_table(markdown)
    assert head[2].startswith("**FAIL: 9 checks: 5 passed, 3 with findings")
    assert "1 skipped, 0 unexplored; 7 left out by design (out of focus), not counted**" in head[2]
    text = "\n".join(head)
    # One group for the three findings that differ only in numbers, with the smallest's repro.
    assert "## Findings: 3, in 1 signature(s)" in text
    assert "3x on mha (plain; bf16): [bytes] written bytes differ at buffer L3.k" in text
    assert f"`kvh repro {Path('results') / 'repros' / 'mha-3.json'}`" in text
    assert "## Not checked: 1 skipped, 0 unexplored" in text
    assert "- 1 skipped: no-cross-attention: no encoder loc" in text
    assert "- not counted: 7 left out by design (out-of-focus 7;" in text
    assert "- builtin pools: eras current; engines torch" in text
    # The results table is folded, its family named.
    assert head[-2] == "<details><summary>Results: base (1 pool kinds)</summary>"


def test_the_first_screen_stays_within_30_lines_with_many_signatures_and_reasons():
    rows = [_finding(n, pool) for n in range(1, 3) for pool in ("mha", "mla", "swa_mha", "swa_mla")]
    rows += [
        {"outcome": "skipped", "detail": f"reason-{i}: why {i}", "skip_kind": "skipped"}
        for i in range(20)
        for _ in range(i + 1)
    ]
    markdown = _summary(rows).markdown
    head = _before_table(markdown)
    assert len(head) <= 30 and head[2].startswith("**FAIL")
    text = "\n".join(head)
    assert "- 20 skipped: reason-19: why 19" in text  # the largest reason first
    assert "other reasons (Skipped, below)" in text
    # Every reason is still listed in the details.
    assert markdown.count("checks skipped: reason-") == 20


def test_rows_left_out_by_design_are_counted_apart_alike_in_progress_and_verdict():
    rows = [
        dict(ROW),
        dict(ROW, outcome="skipped", skip_kind="skipped"),
        dict(ROW, outcome="skipped", skip_kind="by_design"),
        dict(ROW, outcome="skipped"),  # a store written before the column: a plain skip
    ]
    assert rows_counts_line(rows) == counts_line(["pass", "skipped", "skipped"], 1)
    running = RunningCounts()  # what a run prints after each group, kept as rows come
    for row in rows:
        running.add(row)
    assert running.line() == rows_counts_line(rows)
    assert rows_counts_line(rows).startswith("3 checks: 1 passed") and "1 left out by design" in (
        rows_counts_line(rows)
    )
    summary = _summary(
        [{k: v for k, v in row.items() if k in ROW or k == "skip_kind"} for row in rows]
    )
    assert summary.stdout[-2].startswith("PASS: 3 checks: 1 passed, 0 with findings")


def test_release_code_counts_the_backends_this_run_gave_the_release():
    # The release carries code for three backends; this run asked for one of them and one more.
    rows = [
        {"sut": "sglang==9.9", "backend": "hpc_ops", "label": "sglang==9.9/current/-/hpc_ops"},
        {"sut": "sglang==9.9", "backend": "plain", "label": "sglang==9.9/current/-/plain"},
    ]
    checks = records_frame("check", [dict(ROW, **row) for row in rows])
    sut = {"sut": "sglang==9.9", "version": "9.9", "era": "current", "real_code": "fa3,hpc_ops"}
    run = StoredRun(
        run_meta("cpu", 0),
        checks.assign(source="check-x.parquet"),
        records_frame("coverage", []),
        suts=(sut,),
    )
    head = _before_table(run_summary(run, BACKENDS, Path("summary.md")).markdown)
    assert "- sglang==9.9 (version 9.9): era current; release code for 1 of 2 backends" in head
