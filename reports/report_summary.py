"""The short Markdown summary of `kvh report` for CI job pages: the verdict first."""

from __future__ import annotations

from reports.mutation_score import newest_campaign, percent, summary
from reports.real_code_history import drop_line
from reports.report_data import Report

SHOWN = 10


def _lines(items: list[str]) -> list[str]:
    more = [f"- ... and {len(items) - SHOWN} more in the dashboard"] if len(items) > SHOWN else []
    return [f"- {item}" for item in items[:SHOWN]] + more


def report_markdown(report: Report, dashboard: str) -> str:
    parts = [f"**{report.verdict()}**", ""]
    regressions = [
        f"`{r['cell']}`: {r['ratio']:.2f}x slower median (p={r['p_value']:.2g}, "
        f"run {r['latest_run']})"
        for _, r in report.regressions.iterrows()
    ]
    findings = [
        f"`{r['pool']} {r['dtype']} {r['backend']}:{r.get('mode', '')} {r['era']}/{r['engine']} "
        f"{r.get('scenario', '')}`: "
        f"{r['detail'] if isinstance(r.get('detail'), str) and r['detail'] else 'findings'}"
        + (f" (repro: `{r['repro_link']}`)" if r.get("repro_link") else "")
        for _, r in report.findings.iterrows()
    ]
    noisy = (
        [
            f"`{r['cell']}` (robust CV {r['cv']:.0%})"
            for _, r in report.gate.iterrows()
            if r["status"] == "noisy"
        ]
        if not report.gate.empty
        else []
    )
    # "new" cells that do have earlier runs, all on other machines: said, so a reader does not
    # take a sharded job's move to another GPU for a judged pass.
    elsewhere = (
        [
            f"`{r['cell']}`: {r['detail']}"
            for _, r in report.gate.iterrows()
            if r["status"] == "new" and r.get("detail")
        ]
        if not report.gate.empty
        else []
    )
    lost = [drop_line(row) for row in report.real_code_drops.to_dict("records")]
    for title, items in (
        ("Release code lost", lost),
        ("Regressions", regressions),
        ("Correctness findings", findings),
        ("Noisy cells (not judged)", noisy),
        ("No baseline on this machine (not judged)", elsewhere),
        ("Skipped files", report.warnings),
    ):
        if items:
            parts += [f"## {title}", "", *_lines(items), ""]
    rows = newest_campaign(report.mutation)
    if rows:
        whole = summary(rows)
        parts += [
            f"Mutation score of {rows[0]['sut']}: {percent(whole['score'])} of "
            f"{whole['scored']} scored ({whole['mutants']} mutants, {whole['survived']} "
            f"survived, {whole['unexplained']} unexplained); its survivors are in the "
            'dashboard\'s "what kvh would not notice".',
            "",
        ]
    parts.append(f"Dashboard: `{dashboard}` (baseline {report.settings.baseline}).")
    return "\n".join(parts) + "\n"
