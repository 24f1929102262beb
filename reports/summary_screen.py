"""summary.md as a reader meets it: a first screen of at most FIRST_SCREEN lines before any
table (the verdict, what ran, the findings grouped by signature with one `kvh repro` command
each, and the top reasons nothing else was checked), then the details, every big table folded
(`<details>`, which GitHub Markdown renders closed) and the results table folded by pool family.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

import pandas as pd

from reports.finding_groups import group_findings
from reports.outcome import Outcome, SkipKind
from reports.records import text_of
from reports.summary import (
    SummaryInput,
    by_design_mask,
    counted,
    counts,
    doors_driven,
    release_code_of,
    summary_markdown_table,
    sut_line,
)

FIRST_SCREEN = 30  # lines before the first table, at most
# What the first screen lists at most; it shows fewer where the screen would overflow, and
# the details list them all.
FINDING_GROUPS = 5
REASONS = 8
REASON_WIDTH = 140  # characters of a reason on the first screen; the details give it whole
NOT_CHECKED = (Outcome.SKIPPED.value, Outcome.UNEXPLORED.value)
RAN = (Outcome.PASS, Outcome.FINDING, Outcome.KNOWN_DIVERGENCE, Outcome.BOTH_RAISED)


def _first_seen(values: Iterable[object]) -> list[str]:
    return list(dict.fromkeys(text_of(v) for v in values if text_of(v)))


def _ran(checks: pd.DataFrame) -> pd.DataFrame:
    """The rows that were judged (not skipped or unexplored)."""
    if checks.empty:
        return checks
    return checks[checks["outcome"].isin([o.value for o in RAN])]


def what_ran(summary: SummaryInput) -> list[str]:
    """One line per SUT (the builtin pools' eras and engines; a foreign SUT's release, era,
    release code N of M backends, write doors driven), then the scope."""
    ran = _ran(summary.checks)
    lines = []
    builtin = ran[ran["sut"] == "builtin"] if not ran.empty else ran
    if not builtin.empty:
        lines.append(
            f"- builtin pools: eras {', '.join(_first_seen(builtin['era']))}; engines "
            f"{', '.join(_first_seen(builtin['engine']))}"
        )
    for row in summary.suts:
        mine = summary.checks[summary.checks["sut"] == row["sut"]] if len(summary.checks) else None
        ran_here = set() if mine is None else set(mine["backend"])
        # Of the backends this run gave the SUT, those its release code drove (the sut row
        # names every backend the release carries code for, whether this run asked for it).
        real = [name for name in release_code_of(row) if name in ran_here]
        backends, doors = len(ran_here), doors_driven(row)
        lines.append(
            f"- {row['sut']} (version {row.get('version') or 'unknown'}): era "
            f"{row.get('era') or 'none'}; "
            f"release code for {len(real)} of {backends} backends"
            + (f"; write doors driven {doors}" if doors else "")
        )
    lines += [f"- not run: {reason}" for reason in summary.not_run]
    if ran.empty:
        return lines + ["- no check ran"]
    kinds = _first_seen(ran["pool"])
    families = Counter(summary.families.get(kind, "other") for kind in kinds)
    by_family = ", ".join(f"{family} {n}" for family, n in families.items())
    lines.append(
        f"- {ran['backend'].nunique()} backends, {len(kinds)} pool kinds ({by_family}), "
        f"{ran['dtype'].nunique()} dtype(s), {ran['scenario'].nunique()} scenarios; profile "
        f"{summary.meta.get('profile', 'default')}, seed {summary.meta.get('seed')}"
    )
    return lines


def finding_groups(summary: SummaryInput, shown: int) -> list[str]:
    """The findings by signature, largest group first: its count, a finding of it (the one of
    fewest tokens), where the group was seen, and the command that replays it."""
    checks = summary.checks
    found = checks[checks["outcome"] == Outcome.FINDING.value] if len(checks) else checks
    if found.empty:
        return ["## Findings: none"]
    if "repro_path" in found:
        found = found.assign(repro_link=found["repro_path"])
    groups = group_findings(found)
    lines = [f"## Findings: {len(found)}, in {len(groups)} signature(s)"]
    for group in groups[:shown]:
        first = (
            group.findings.sort_values("tokens", kind="stable").iloc[0]
            if ("tokens" in group.findings)
            else group.findings.iloc[0]
        )
        where = "; ".join(
            ", ".join(group.spread(column))
            for column in ("backend", "dtype")
            if group.spread(column)
        )
        repro = f": `kvh repro {group.repro}`" if group.repro else ""
        lines.append(
            f"- {group.count}x on {group.signature.door} ({where}): "
            f"{text_of(first.get('detail'))}{repro}"
        )
    if len(groups) > shown:
        lines.append(f"- and {len(groups) - shown} more signatures (Findings, below)")
    return lines


def _short(text: str) -> str:
    return text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 3].rstrip() + "..."


def not_checked(summary: SummaryInput, shown: int) -> list[str]:
    """What was not checked: the top reasons by checks, the rest folded into one line, and the
    rows left out by design, said apart."""
    checks, by_design, not_offered = counted(summary.checks)
    tally = counts(checks["outcome"] if len(checks) else [])
    skipped, unexplored = tally[Outcome.SKIPPED], tally[Outcome.UNEXPLORED]
    lines = [f"## Not checked: {skipped} skipped, {unexplored} unexplored"]
    rows = checks[checks["outcome"].isin(NOT_CHECKED)] if len(checks) else checks
    reasons = Counter(
        f"{row['outcome']}: {text_of(row.get('detail'))}" for row in rows.to_dict("records")
    )
    top = reasons.most_common()
    lines += [f"- {n} {_short(reason)}" for reason, n in top[:shown]]
    rest = top[shown:]
    if rest:
        lines.append(
            f"- and {sum(n for _, n in rest)} more checks for {len(rest)} other reasons "
            "(Skipped, below)"
        )
    if by_design:
        apart = summary.checks[by_design_mask(summary.checks, (SkipKind.BY_DESIGN,))]
        names = Counter(text_of(d).split(":", 1)[0] for d in apart["detail"])
        lines.append(
            f"- not counted: {by_design} left out by design ("
            + ", ".join(f"{name} {n}" for name, n in names.most_common())
            + "; a declared trim of the plan: the checks kept reach every branch)"
        )
    if not_offered:
        lines.append(
            f"- not counted: {not_offered} on pool kinds or backends the SUT does not offer "
            "(combinations that cannot apply: the SUT has no such class, design or backend file)"
        )
    return lines


def first_screen(summary: SummaryInput) -> list[str]:
    """The lines before the details; never more than FIRST_SCREEN, so the lists shrink (down
    to one entry each) where a run has many SUTs, signatures or reasons."""
    meta = summary.meta
    head = [
        f"# kvh run {meta['run_id']}",
        "",
        f"**{summary.verdict()}**",
        "",
        f"commit `{meta['git_commit']}`, host `{meta['host']}`, device `{meta['device']}`, "
        f"seed {meta['seed']}",
        "",
        "## What ran",
        *what_ran(summary),
        "",
    ]
    groups, reasons = FINDING_GROUPS, REASONS
    while True:
        lines = [*head, *finding_groups(summary, groups), "", *not_checked(summary, reasons), ""]
        if len(lines) + BEFORE_TABLE <= FIRST_SCREEN or (groups, reasons) == (1, 1):
            return lines
        if reasons > 3 or groups == 1:
            reasons -= 1
        else:
            groups -= 1


DETAILS_HEAD = ["## Details", ""]
RESULTS_NOTE = [
    "Cells: checks passed / with findings (+ known divergences), one check = one scenario "
    "through one backend call site; a blank cell: nothing planned there, or left out by design.",
    "",
]
# The details' lines before their first table: the heading, the results note, and the fold's
# opening `<details>` line and blank (fold).
BEFORE_TABLE = len(DETAILS_HEAD) + len(RESULTS_NOTE) + 2


def fold(markdown: str, summary: Optional[str] = None) -> str:
    """`markdown` with every table folded into a closed `<details>` (named `summary`, or by its
    row count)."""
    out: list[str] = []
    block: list[str] = []

    def close() -> None:
        if block:
            rows = max(0, len(block) - 2)
            out.extend(
                [
                    f"<details><summary>{summary or f'table: {rows} rows'}</summary>",
                    "",
                    *block,
                    "",
                    "</details>",
                ]
            )
            block.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            block.append(line)
        else:
            close()
            out.append(line)
    close()
    return "\n".join(out)


def results_by_family(summary: SummaryInput) -> list[str]:
    """The pool x dtype by era/engine table, one folded table per pool family (base first)."""
    checks = summary.checks
    if checks.empty:
        return [summary_markdown_table(checks)]
    order = list(dict.fromkeys(summary.families.values()))
    family = checks["pool"].map(lambda kind: summary.families.get(kind, "other"))
    lines = list(RESULTS_NOTE)
    for name in [*order, "other"]:
        rows = checks[family == name]
        if rows.empty:
            continue
        kinds = rows["pool"].nunique()
        lines += [fold(summary_markdown_table(rows), f"Results: {name} ({kinds} pool kinds)"), ""]
    return lines


def _listed(title: str, items: Iterable[str], folded_over: int = 12) -> list[str]:
    items = list(items)
    if not items:
        return []
    bullets = [f"- {item}" for item in items]
    if len(bullets) > folded_over:
        bullets = [
            f"<details><summary>{len(items)} lines</summary>",
            "",
            *bullets,
            "",
            "</details>",
        ]
    return ["", f"## {title}", "", *bullets]


def details(summary: SummaryInput) -> list[str]:
    """Everything after the first screen: the results by family, the full lists, then the
    sections (era table, exploration, coverage) with their tables folded."""
    interrupted = summary.interrupted
    lines = [*DETAILS_HEAD, *results_by_family(summary)]
    for title, items in (
        ("Systems under test", [sut_line(row) for row in summary.suts]),
        ("SUTs not run", summary.not_run),
        ("Not finished (interrupted)", interrupted.unfinished if interrupted else ()),
        ("Findings", summary.finding_lines),
        ("Known divergences", summary.divergence_lines),
        ("Skipped", summary.skip_lines),
    ):
        lines += _listed(title, items)
    for _, markdown in summary.sections:
        lines += ["", fold(markdown.rstrip("\n"))]
    return lines


def summary_markdown(summary: SummaryInput) -> str:
    """summary.md: the first screen, then the details."""
    return "\n".join([*first_screen(summary), *details(summary)]) + "\n"
