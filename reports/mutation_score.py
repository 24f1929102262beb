"""The mutation score of a campaign's rows (`kvh mutants --mutate`, record kind `mutation`): what
the campaign prints, the dashboard's "what kvh would not notice" section and its history.

Each row is one mutant, with its status (harness/run/release_mutation.py STATUSES) and, for a
survivor (judged and not killed, or UNREACHED: a statement no check ran), the class its record
gives it (mutants/survivors_*.py, stamped on the row when it is written, so a stored score does
not change when the registry does): score = kills / (kills + survivors - equivalent - out of
reach - outside the write path). A LIMITED mutant (a harness-caused skip or error) and one
cosmic-ray no longer applies are counted apart, in neither term.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Iterable, Optional

import pandas as pd

KILLS = ("killed", "killed_ci", "killed_at_load")
# A survivor's classes (mutants/survivor_record.py CLASSES), and a survivor no record explains.
EXPLAINED = {
    "equivalent": "equivalent",
    "out of reach on a CPU": "out_of_reach",
    "outside the write path": "outside_write",
}
GAP, UNEXPLAINED = "gap", "unexplained"
UNREACHED = "unreached"  # harness/run/release_mutation.py STATUSES
NOT_KILLED = ("survived", UNREACHED)


def summary(rows: Iterable[dict], where: Optional[str] = None) -> dict:
    """Counts and score over `rows` (those of function or file `where`, where given)."""
    counts: Counter = Counter()
    for row in rows:
        if where is not None and where not in (row["function"], row["file"]):
            continue
        counts["mutants"] += 1
        counts[row["status"]] += 1
        if row["status"] in NOT_KILLED:
            kind = row.get("survivor_class") or UNEXPLAINED
            counts[EXPLAINED.get(kind, kind)] += 1
    kills = sum(counts[s] for s in KILLS)
    explained = sum(counts[name] for name in EXPLAINED.values())
    scored = kills + sum(counts[s] for s in NOT_KILLED) - explained
    keys = ("mutants", *KILLS, *NOT_KILLED, *EXPLAINED.values(), GAP, UNEXPLAINED,
            "limited", "not_applied")  # fmt: skip
    return {**{k: counts[k] for k in keys}, "scored": scored,
            "score": kills / scored if scored else None}  # fmt: skip


def percent(score: Optional[float]) -> str:
    return "n/a" if score is None else f"{100 * score:.1f}%"


def _places(rows: list[dict]) -> list[str]:
    return sorted({r["file"] for r in rows}) + sorted({r["function"] for r in rows})


def score_lines(rows: list[dict], release: str) -> list[str]:
    """The score as Markdown: the whole campaign, the doors, each file and each function, then
    each survivor with its class and diff."""
    whole = summary(rows)
    door = summary([r for r in rows if r.get("door")])
    lines = [
        f"## Mutation score of {release}: {percent(whole['score'])} "
        f"({whole['scored']} scored of {whole['mutants']} mutants)",
        "",
        ", ".join(f"{k} {whole[k]}" for k in whole if k not in ("score", "scored")),
        "",
        f"write doors: {percent(door['score'])} ({door['scored']} scored of {door['mutants']})",
        "",
        "| where | mutants | killed | killed_ci | killed_at_load | survived | unreached "
        "| explained | score |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for where in _places(rows):
        row = summary(rows, where)
        explained = sum(row[name] for name in EXPLAINED.values())
        lines.append(
            f"| {where} | {row['mutants']} | {row['killed']} | {row['killed_ci']} | "
            f"{row['killed_at_load']} | {row['survived']} | {row['unreached']} | {explained} | "
            f"{percent(row['score'])} |"
        )
    groups = survivor_groups(rows)
    if groups:
        lines += ["", "### What kvh would not notice", ""]
    for (kind, reason), survivors in groups.items():
        lines += [f"#### {kind}: {len(survivors)}" + (f" ({reason})" if reason else ""), ""]
        for row in survivors:
            lines += [
                f"- `{row['mutant']}` in {row['function']} (line {row['line']}, {row['status']})",
                "", "```diff", str(row.get("diff") or ""), "```", "",
            ]  # fmt: skip
    return lines


def survivor_groups(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """The mutants not killed, by (class, reason): those no record explains and the gaps first,
    so that what needs reading leads."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        if row["status"] in NOT_KILLED:
            kind = row.get("survivor_class") or UNEXPLAINED
            groups.setdefault((kind, str(row.get("survivor_reason") or "")), []).append(row)
    leading = (UNEXPLAINED, GAP)
    return dict(
        sorted(groups.items(), key=lambda item: (item[0][0] not in leading, item[0][0], item[0][1]))
    )


def newest_campaign(frame: pd.DataFrame) -> list[dict]:
    """The rows of the store's newest campaign (by its time, then its run id)."""
    if frame.empty:
        return []
    run_id = max(zip(frame["time"].astype(str), frame["run_id"].astype(str)))[1]
    return frame[frame["run_id"] == run_id].to_dict("records")


def mutation_html(frame: pd.DataFrame) -> str:
    """The dashboard's section: the newest campaign of each release, its score per file and
    function and its survivors with their diffs and classes; then every campaign's score, so
    history shows it moving."""
    if frame.empty:
        return '<p class="note">No mutation campaign in this store (`kvh mutants --sut sglang ' \
            '--mutate --out DIR`).</p>'  # fmt: skip
    parts = []
    history = []
    for (run_id, sut), rows in frame.groupby(["run_id", "sut"], sort=False):
        whole = summary(rows.to_dict("records"))
        history.append((str(rows["time"].iloc[0]), sut, run_id, whole))
    history.sort()
    newest = {}
    for when, sut, run_id, _ in history:
        newest[sut] = run_id
    for sut, run_id in newest.items():
        rows = frame[(frame["run_id"] == run_id) & (frame["sut"] == sut)].to_dict("records")
        whole, door = summary(rows), summary([r for r in rows if r.get("door")])
        table = "".join(
            f"<tr><td>{escape(w)}</td><td>{s['mutants']}</td><td>{s['killed'] + s['killed_ci']}"
            f"</td><td>{s['killed_at_load']}</td><td>{s['survived']}</td><td>{s['unreached']}"
            f"</td><td>{sum(s[name] for name in EXPLAINED.values())}</td>"
            f"<td>{percent(s['score'])}</td></tr>"
            for w in _places(rows)
            for s in [summary(rows, w)]
        )
        survivors = "".join(
            f"<li><b>{escape(kind)}</b>: {len(group)} {escape(reason)}<details><summary>"
            "their diffs</summary><ul>"
            + "".join(
                f"<li><code>{escape(r['mutant'])}</code> in {escape(r['function'])} "
                f"({escape(r['status'])})<pre>{escape(str(r.get('diff')))}</pre></li>"
                for r in group
            )
            + "</ul></details></li>"
            for (kind, reason), group in survivor_groups(rows).items()
        )
        parts.append(
            f"<h3>{escape(sut)}: {percent(whole['score'])} of {whole['scored']} scored "
            f"({whole['mutants']} mutants; write doors {percent(door['score'])})</h3>"
            "<table><thead><tr><th>where</th><th>mutants</th><th>killed</th>"
            "<th>killed at load</th><th>survived</th><th>unreached</th><th>explained</th>"
            "<th>score</th></tr>"
            f"</thead><tbody>{table}</tbody></table>"
            + (f"<h4>What kvh would not notice</h4><ul>{survivors}</ul>" if survivors else "")
        )
    moving = "".join(
        f"<tr><td>{escape(when)}</td><td>{escape(sut)}</td><td>{escape(run_id)}</td>"
        f"<td>{whole['mutants']}</td><td>{percent(whole['score'])}</td></tr>"
        for when, sut, run_id, whole in history
    )
    return "".join(parts) + (
        "<h3>History</h3><table><thead><tr><th>time</th><th>release</th><th>run</th>"
        f"<th>mutants</th><th>score</th></tr></thead><tbody>{moving}</tbody></table>"
    )
