"""The mutation score of a campaign's records (harness/run/release_mutation.py), with each
survivor's class from mutants/mutation_survivors.py: what `kvh mutants --mutate` prints and
`kvh report` shows.

score = kills / (judged - equivalent - out of reach), where judged holds every kill and every
survivor; a LIMITED mutant (a harness-caused skip or error) and one cosmic-ray no longer applies
are counted apart, in neither term.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

from mutants.mutation_survivors import EQUIVALENT, GAP, OUT_OF_REACH, classified
from mutants.release_renames import DOOR_PREFIX, DOOR_WORD

KILLS = ("killed", "killed_ci", "killed_at_load")
APART = ("limited", "not_applied")


def is_door(function: str) -> bool:
    """A pool's write door ('memory_pool.py MHATokenToKVPool.set_kv_buffer'): a method whose name
    is set_*buffer, of a class in a *pool file (a backend's own _set_kv_buffer is not a door)."""
    base, _, qualified = function.partition(" ")
    method = qualified.split(".")[-1]
    return (
        "pool" in base and "." in qualified
        and method.startswith(DOOR_PREFIX) and method.endswith(DOOR_WORD)
    )  # fmt: skip


def survivor_class(record: dict, release: str) -> str:
    """A survivor's class (EQUIVALENT, OUT_OF_REACH, GAP) or "unexplained"; "" otherwise."""
    if record["status"] != "survived":
        return ""
    found = classified(release, record["id"], record.get("diff", ""))
    return found.kind if found else "unexplained"


def summary(records: Iterable[dict], release: str, where: Optional[str] = None) -> dict:
    """Counts and score over `records` (those of function or file `where`, where given)."""
    counts: Counter = Counter()
    for record in records:
        if where is not None and where not in (record["function"], record["file"]):
            continue
        counts["mutants"] += 1
        counts[record["status"]] += 1
        kind = survivor_class(record, release)
        if kind:
            counts[{EQUIVALENT: "equivalent", OUT_OF_REACH: "out_of_reach", GAP: "gap"}.get(
                kind, "unexplained"
            )] += 1  # fmt: skip
    kills = sum(counts[s] for s in KILLS)
    judged = kills + counts["survived"]
    scored = judged - counts["equivalent"] - counts["out_of_reach"]
    return {
        "mutants": counts["mutants"], "killed": counts["killed"], "killed_ci": counts["killed_ci"],
        "killed_at_load": counts["killed_at_load"], "survived": counts["survived"],
        "equivalent": counts["equivalent"], "out_of_reach": counts["out_of_reach"],
        "gap": counts["gap"], "unexplained": counts["unexplained"],
        "limited": counts["limited"], "not_applied": counts["not_applied"],
        "scored": scored, "score": kills / scored if scored else None,
    }  # fmt: skip


def _percent(score: Optional[float]) -> str:
    return "n/a" if score is None else f"{100 * score:.1f}%"


def score_lines(records: list[dict], release: str) -> list[str]:
    """The score as Markdown: the whole campaign, the doors, each file and each function, then
    each survivor with its class and diff."""
    whole = summary(records, release)
    doors = [r for r in records if is_door(r["function"])]
    door = summary(doors, release)
    lines = [
        f"## Mutation score of {release}: {_percent(whole['score'])} "
        f"({whole['scored']} scored of {whole['mutants']} mutants)",
        "",
        " ".join(f"{k} {whole[k]}" for k in whole if k not in ("score", "scored")),
        f"write doors: {_percent(door['score'])} ({door['scored']} scored of {door['mutants']})",
        "",
        "| where | mutants | killed | killed_ci | killed_at_load | survived | explained | score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    places = sorted({r["file"] for r in records}) + sorted({r["function"] for r in records})
    for where in places:
        row = summary(records, release, where)
        explained = row["equivalent"] + row["out_of_reach"]
        lines.append(
            f"| {where} | {row['mutants']} | {row['killed']} | {row['killed_ci']} | "
            f"{row['killed_at_load']} | {row['survived']} | {explained} | "
            f"{_percent(row['score'])} |"
        )
    survivors = [r for r in records if r["status"] == "survived"]
    if survivors:
        lines += ["", "### What kvh would not notice", ""]
    for record in survivors:
        kind = survivor_class(record, release)
        found = classified(release, record["id"], record.get("diff", ""))
        lines += [
            f"- `{record['id']}` in {record['function']} (line {record['line']}): **{kind}**"
            + (f": {found.reason}" if found else ""),
            "", "```diff", record.get("diff", ""), "```", "",
        ]  # fmt: skip
    return lines
