"""`kvh mutants --sut sglang[==X] --mutate`: the mutation campaign (harness/run/release_mutation.py)
over every release function the harness's run reaches, with cosmic-ray's operators.

Prints the scope (functions, mutants, the seed and what was drawn), a line per mutant as it is
decided, then the score per file and function. Keeps its book in cosmic-ray's work database
(`mutation.sqlite` under --out): `--resume` judges only what an interrupted campaign with the
same arguments left (and, where it left nothing, prints the score without judging the
unmodified release again). Writes `release-mutation.json` to --out atomically, at the end and when
stopped, and at the end the `mutation` rows of the results store there (`kvh report OUT` shows
the score). Exit 0 when every mutant judged was killed or its survival is explained by a record
of mutants/survivors_*.py as equivalent, out of reach or outside the write path, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from operator import attrgetter
from pathlib import Path

from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_OK,
    StopSignals,
    UsageError,
    interrupted_exit_code,
    signal_of,
)
from harness.run.release_copy import release_folder, release_named
from harness.run.release_mutation import (
    KILLS,
    STATUSES,
    SURVIVED,
    MutationResult,
    campaign,
    prepared,
)
from harness.run.release_renames import sample
from mutants.generated import GeneratedMutant, generated_mutants
from mutants.mutation_survivors import closed_gap, stamped
from mutants.survivor_record import EQUIVALENT, OUT_OF_REACH, OUTSIDE_THE_WRITE
from reports.atomic import write_json_atomic
from reports.mutation_score import score_lines, summary
from reports.records import records_frame
from reports.store import append, run_meta
from scenarios.profiles import PROFILE_ENV

BOOK = "mutation.sqlite"
ARGUMENTS = "campaign.json"  # what the book was started with: a resume must match it
RECORDS = "release-mutation.json"
KIND = "mutation"


def _book(out: Path, started: dict, resume: bool):
    """cosmic-ray's work database under `out`, fresh or (with `resume`) the one these arguments
    started; and the ids it has results for."""
    from cosmic_ray.work_db import WorkDB

    path, said = out / BOOK, out / ARGUMENTS
    if resume and path.is_file() and said.is_file():
        before = json.loads(said.read_text())
        if before != started:
            differing = sorted(k for k in started if before.get(k) != started[k])
            raise UsageError(
                f"--resume: {out} holds a campaign started with other {', '.join(differing)}"
            )
        book = WorkDB(str(path), WorkDB.Mode.open)
        return book, {job_id for job_id, _ in book.results}
    if resume:
        print(f"kvh: --resume: no campaign under {out}; starting one", file=sys.stderr)
    path.unlink(missing_ok=True)
    write_json_atomic(said, started)
    return WorkDB(str(path), WorkDB.Mode.create), set()


def _finished(out: Path, started: dict):
    """The book under `out` when these arguments started it and it decided every mutant it
    drew (its work items are the draw), else None: a resume of a finished campaign needs no
    judge of the unmodified release."""
    from cosmic_ray.work_db import WorkDB

    path, said = out / BOOK, out / ARGUMENTS
    if not (path.is_file() and said.is_file()) or json.loads(said.read_text()) != started:
        return None
    book = WorkDB(str(path), WorkDB.Mode.open)
    drawn = {job.job_id for job in book.work_items}
    if drawn and drawn <= {job_id for job_id, _ in book.results}:
        return book
    book.close()
    return None


def _work_item(mutant: GeneratedMutant):
    from cosmic_ray.work_item import MutationSpec, WorkItem

    spec = MutationSpec(
        module_path=mutant.file, operator_name=mutant.operator, occurrence=mutant.occurrence,
        start_pos=(mutant.line, mutant.column), end_pos=mutant.end,
        definition_name=mutant.function,
    )  # fmt: skip
    return WorkItem.single(mutant.id, spec)


def _work_result(result: MutationResult):
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    judged = result.status in STATUSES and result.status not in ("limited", "not_applied")
    return WorkResult(
        worker_outcome=WorkerOutcome.NORMAL if judged else WorkerOutcome.SKIPPED,
        output=json.dumps(result.to_dict()),
        test_outcome=(TestOutcome.KILLED if result.killed else TestOutcome.SURVIVED)
        if judged
        else None,
        diff=result.diff,
    )


def _carried(path: Path, started: dict, left: list[GeneratedMutant]) -> list[MutationResult]:
    """The decisions `path` (a campaign's RECORDS) holds for mutants of `left` (the same id and
    line): every one from a campaign of the same release over the same universe; from one over a
    part of it, the kills (a finding on some of the cells is a finding of the whole) and the
    judged survivors whose record says no cell can tell them apart (`_no_cell_tells`); any other
    survival there says nothing of the added cells. From either, never a survivor whose record
    is a gap closed since (`closed_gap`). A UsageError for anything else."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"--carry {path}: not a campaign's {RECORDS}: {error}") from None
    if stored.get("release") != started["release"]:
        raise UsageError(f"--carry {path}: a campaign of another release ({stored.get('release')})")
    theirs, ours = stored.get("universe") or {}, started["universe"]
    whole = theirs == ours
    if not whole and not all(set(theirs.get(k) or ()) <= set(ours[k]) for k in ours):
        raise UsageError(f"--carry {path}: a campaign with another universe ({theirs})")
    by_id = {record["id"]: record for record in stored.get("records", [])}
    fields = set(MutationResult.__dataclass_fields__)
    return [
        MutationResult(**{k: v for k, v in by_id[m.id].items() if k in fields})
        for m in left
        if m.id in by_id
        and by_id[m.id]["line"] == m.line
        and not closed_gap(started["release"], by_id[m.id])
        and (whole or by_id[m.id]["status"] in KILLS or _no_cell_tells(by_id[m.id], started))
    ]


def _no_cell_tells(record: dict, started: dict) -> bool:
    """A judged survivor whose record (mutants/survivors_*.py) says equivalent, out of reach on a
    CPU or outside the write path: no input tells it apart, it runs only on a GPU, or it is the
    attention math no check judges, so a universe that only adds cells cannot kill it. An
    unreached mutant is measured again over the added cells instead; a gap is judged again."""
    if record["status"] != SURVIVED:
        return False
    said = stamped(record, started["release"])["survivor_class"]
    return said in (EQUIVALENT, OUT_OF_REACH, OUTSIDE_THE_WRITE)


def _say(result: MutationResult, done: int, total: int) -> None:
    stage = f" at --profile {result.profile}" if result.profile else ""
    print(
        f"kvh: [{done}/{total}] {result.function} {result.operator.split('/')[-1]}"
        f"#{result.occurrence} (line {result.line}): {result.status}{stage}, {result.checks} "
        f"checks in {result.seconds:.0f}s" + (f" ({result.detail[:200]})" if result.detail else ""),
        file=sys.stderr,
        flush=True,
    )


def _write(out: Path, book, started: dict, scope: dict, seconds: float, stopped: str) -> list:
    records = [json.loads(result.output) for _, result in book.results if result.output]
    write_json_atomic(
        out / RECORDS,
        {
            **started,
            "scope": scope,
            "seconds": round(seconds, 1),
            "stopped": stopped,  # SIGINT or SIGTERM: the records are those decided until then
            "records": records,
        },
    )
    return records


def main(arguments: argparse.Namespace, universe) -> int:
    from harness.cli import main as kvh  # what each warm judge calls (forked_judges.py)

    spec = arguments.sut
    if os.environ.get(PROFILE_ENV):
        raise UsageError(
            f"unset ${PROFILE_ENV}: the campaign's stages name their own profiles (the builtin "
            "scenarios, then --profile ci for a survivor)"
        )
    try:
        package = release_folder(spec) / "sglang"
    except ValueError as error:
        raise UsageError(str(error)) from None
    out: Path = arguments.out
    out.mkdir(parents=True, exist_ok=True)
    say = lambda line: print(f"kvh: {line}", file=sys.stderr, flush=True)  # noqa: E731
    start = time.monotonic()
    started = {  # as JSON gives it back, so that a resume compares like with like
        "release": spec, "universe": vars(universe), "seed": arguments.seed,
        "sample": arguments.sample, "function": arguments.function or [],
    }  # fmt: skip
    started = json.loads(json.dumps(started))
    finished = _finished(out, started) if arguments.resume else None
    if finished is not None:
        decided = len(list(finished.results))
        say(f"--resume: {decided} of {decided} already decided; nothing left to judge")
        before = json.loads((out / RECORDS).read_text()) if (out / RECORDS).is_file() else {}
        records = _write(
            out, finished, started, before.get("scope", {}), before.get("seconds", 0.0), ""
        )
        finished.close()
        release = release_named(spec)
        return _scored([stamped(record, spec, release) for record in records], spec)
    try:
        reference, judges, reach = prepared(
            spec, universe, out / "work", say, arguments.cold, kvh, not arguments.judge_unreached
        )
    except RuntimeError as error:
        raise UsageError(str(error)) from None
    reached = set().union(*reference.trails.values()) if reference.trails else set()
    scope = generated_mutants(package, reached)
    mutants = scope.mutants
    if arguments.function:
        mutants = [m for m in mutants if any(f in m.function for f in arguments.function)]
        if not mutants:
            raise UsageError(f"--function {','.join(arguments.function)}: no reached function")
    drawn = sample(mutants, arguments.sample, arguments.seed, key=attrgetter("file", "line", "id"))
    placed = {
        "functions": sum(len(f) for f in scope.files.values()),
        "files": len(scope.files),
        "mutants": len(scope.mutants),
        "unplaced": scope.unplaced,
    }
    say(
        f"{placed['mutants']} mutants (cosmic-ray's core operators) in {placed['functions']} "
        f"functions of {placed['files']} files that {spec}'s trail reaches"
        + (f"; not placed: {scope.unplaced} (files defining each)" if scope.unplaced else "")
        + f"; judging {len(drawn)} (--seed {arguments.seed})"
    )
    book, decided = _book(out, started, arguments.resume)
    left = [m for m in drawn if m.id not in decided]
    if decided:
        say(f"--resume: {len(drawn) - len(left)} of {len(drawn)} already decided")
    known = {job.job_id for job in book.work_items}
    book.add_work_items([_work_item(m) for m in left if m.id not in known])
    counted = [len(drawn) - len(left)]

    def done(result: MutationResult) -> None:
        book.set_result(result.id, _work_result(result))
        counted[0] += 1
        _say(result, counted[0], len(drawn))

    if arguments.carry:
        carried = _carried(arguments.carry, started, left)
        say(f"--carry: {len(carried)} decisions taken from {arguments.carry}")
        for result in carried:
            done(result)
        taken = {result.id for result in carried}
        left = [m for m in left if m.id not in taken]

    try:
        with StopSignals():
            campaign(spec, left, reference, judges, out / "work", arguments.jobs, done, reach)
    except KeyboardInterrupt as interrupt:
        stopped = signal_of(interrupt)
        _write(out, book, started, placed, time.monotonic() - start, stopped)
        say(f"{stopped}: stopped after {counted[0]} of {len(drawn)}; --resume goes on")
        return interrupted_exit_code(interrupt)
    finally:
        judges.stop_all()
    records = _write(out, book, started, placed, time.monotonic() - start, "")
    book.close()
    # The store's `mutation` rows, which `kvh report OUT` shows with the score's history.
    release = release_named(spec)
    rows = [stamped(record, spec, release) for record in records]
    append(out, records_frame(KIND, rows), KIND, run_meta("cpu", arguments.seed, "", spec))
    print(f"mutation campaign over {spec} in {(time.monotonic() - start) / 60:.1f} min")
    return _scored(rows, spec)


def _scored(rows: list[dict], spec: str) -> int:
    """Prints the score of the campaign's stamped rows; its exit code."""
    for line in score_lines(rows, spec):
        print(line)
    totals = summary(rows)
    return EXIT_OK if not totals["unexplained"] and not totals["gap"] else EXIT_FINDINGS
