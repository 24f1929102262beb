"""The mutation campaign: cosmic-ray's mutants of every release function the harness's run reaches
(mutants/generated.py), each judged on the cells whose trail reaches its function.

The unmodified release is judged once over the universe with `kvh run --trail` (as the rename
campaign does, harness/run/release_renames.py): its rows give each cell's trail, the scope, and
the plan a mutant's run is held to. Each mutant is then a fork of a warm process
(harness/run/forked_judges.py) that copies the release, applies the one edit with cosmic-ray and
judges the copy as `sglang@DIR` at the builtin scenarios (no profile); a mutant that survives
that is judged again at `--profile ci` on the same cells. A mutant whose statement the unmodified
release never ran at a stage is not judged there (harness/run/mutant_reach.py): coverage.py
measures what it ran over the universe at both stages, and a statement neither ran is UNREACHED.

What a mutant comes to (STATUSES) is decided from what the run wrote, never from its output's
wording alone, except a load failure, which the loader says in one line. A harness-caused raise
(harness/compare/error_causes.py) turns a check into a skip with its cause: that is a LIMITED
mutant, never a kill. cosmic-ray's own work database (its WorkItem and WorkResult records) keeps
the campaign's book, so an interrupted campaign resumes without judging a mutant twice.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from harness.compare.error_causes import CAUSES_BY_NAME
from harness.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted
from harness.run.forked_judges import Judges
from harness.run.mutant_reach import CI_ONLY, FIRST, UNREACHED, Reach, measured_reach
from harness.run.release_copy import release_folder, sparse_copy
from harness.run.release_renames import judged_slice, prepared_judges, universe_baseline
from harness.run.release_source import Slice, SliceResult, plan_difference, read_slice, slice_argv
from mutants.generated import GeneratedMutant, mutated_text

KILLED, KILLED_CI, KILLED_AT_LOAD = "killed", "killed_ci", "killed_at_load"
SURVIVED, LIMITED, NOT_APPLIED = "survived", "limited", "not_applied"
# How a record names the folder a mutant's copy was judged in.
MUTANT_COPY = "<mutant copy>"
STATUSES = {
    KILLED: "a finding at the builtin scenarios",
    KILLED_CI: "no finding at the builtin scenarios, a finding at --profile ci",
    KILLED_AT_LOAD: "the copy does not import, or every check it ran is a finding",
    SURVIVED: "a pass with the release's plan, row for row, at both profiles",
    UNREACHED: "no check of the unmodified release ran its statement, at either profile",
    LIMITED: "no verdict of the release: a harness-caused skip or error (never a kill)",
    NOT_APPLIED: "cosmic-ray no longer applies it to the release's text",
}
KILLS = (KILLED, KILLED_CI, KILLED_AT_LOAD)
STOPPED = (EXIT_INTERRUPTED, EXIT_TERMINATED, -signal.SIGINT, -signal.SIGTERM)  # a judge's exit
# The stages, each a profile (None: the builtin deterministic scenarios).
STAGES: tuple[Optional[str], ...] = (None, "ci")
NO_CELLS = Slice((), (), ())
# What a judge's child tells the campaign of its mutant.
MUTATED = "mutated.json"
LOAD_FAILED = "failed to import"


@dataclass
class MutationResult:
    id: str
    file: str
    function: str
    operator: str
    occurrence: int
    line: int
    status: str  # one of STATUSES
    diff: str = ""
    cells: dict = field(default_factory=dict)
    profile: str = ""  # the stage that decided it ("" the builtin scenarios, or "ci")
    checks: int = 0
    findings: int = 0
    plan_differences: int = 0
    seconds: float = 0.0
    detail: str = ""
    cannot_run_here: str = ""  # UNREACHED: why its statement cannot run on this machine, if so

    @property
    def killed(self) -> bool:
        return self.status in KILLS

    def to_dict(self) -> dict:
        return asdict(self)


def _diff(before: str, after: str, relative: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{relative}", f"b/{relative}", lineterm="", n=1
    )
    return "\n".join(lines)


def _stage_argv(copy: Path, cells: Slice, out: Path, profile: Optional[str]) -> list[str]:
    # A kill needs a failure, not its minimal repro: shrinking one that raises on one CP rank
    # restarts the rank group at every step (measured: 465 s for one mha cell).
    explore = ["--profile", profile, "--no-shrink"] if profile else []
    return slice_argv(f"sglang@{copy}", cells, out) + explore


def mutate_then_judge(
    mutant: GeneratedMutant,
    release: str,
    scratch: Path,
    trails: dict[tuple[str, str, str], set[str]],
    stage: int = 0,
) -> Optional[list[str]]:
    """In a judge's child: copy the release, apply `mutant`, write what changed to
    `scratch/MUTATED`, and give the argv that judges the copy at `stage` (None where it did not
    apply)."""
    source = release_folder(release)
    edited = Path("sglang") / mutant.file
    copy = sparse_copy(source, scratch / "release", [edited], with_siblings=release != "sglang")
    path = copy / edited
    before = path.read_text()
    after = mutated_text(before, mutant)
    cells = judged_slice({mutant.function}, trails, NO_CELLS)
    said = {"applied": bool(after) and after != before, "cells": asdict(cells), "diff": ""}
    if said["applied"]:
        path.unlink()  # a hard link to the release's own file: never written through
        path.write_text(after)
        said["diff"] = _diff(before, after, str(edited))
    (scratch / MUTATED).write_text(json.dumps(said))
    argv = _stage_argv(copy, cells, scratch / f"out-{stage}", STAGES[stage])
    return argv if said["applied"] else None


def unreached(mutant: GeneratedMutant, release: str, trails, line: int, why: str) -> MutationResult:
    """The record of a mutant whose statement (first line `line`) no check of the unmodified
    release ran at either stage: its diff, and no judge."""
    edited = Path("sglang") / mutant.file
    before = (release_folder(release) / edited).read_text()
    after = mutated_text(before, mutant)
    applied = bool(after) and after != before
    return MutationResult(
        mutant.id, mutant.file, mutant.function, mutant.operator, mutant.occurrence, mutant.line,
        UNREACHED if applied else NOT_APPLIED,
        diff=_diff(before, after, str(edited)) if applied else "",
        cells=asdict(judged_slice({mutant.function}, trails, NO_CELLS)),
        detail=f"no check of the unmodified release ran its statement (line {line}) at the "
        "builtin scenarios or at --profile ci" if applied else "cosmic-ray applied no change",
        cannot_run_here=why if applied else "",
    )  # fmt: skip


def status_of(
    judged: SliceResult, reference: Optional[SliceResult], cells: Slice, output: str
) -> tuple[str, str, int]:
    """What one stage's run of a mutant comes to: (status, detail, plan differences); SURVIVED
    here means no kill and no limit at this stage. `reference`: the unmodified release's run
    over the same scenarios, whose plan this one is held to (None at a stage with other
    scenarios than the reference's: its verdict alone decides)."""
    if judged.verdict == "ERROR":
        if LOAD_FAILED in output and "ModuleNotFoundError" not in output:
            return KILLED_AT_LOAD, judged.detail, 0
        return LIMITED, f"no verdict: {judged.detail}", 0
    if reference is None:
        if judged.verdict == "FINDING":
            return KILLED, (judged.finding_lines or [""])[0][:300], 0
        return SURVIVED, "", 0
    expected = {key: value for key, value in reference.plan.items() if cells.holds(key)}
    differences = plan_difference(expected, judged.plan)
    if judged.verdict == "FINDING":
        status = KILLED_AT_LOAD if judged.findings == judged.checks else KILLED
        return status, (judged.finding_lines or [""])[0][:300], len(differences)
    limits = [
        key for key, after in judged.plan.items()
        if after != expected.get(key) and after[0] == "skipped" and after[2] in CAUSES_BY_NAME
    ]  # fmt: skip
    if limits:
        cause = judged.plan[limits[0]][2]
        return (
            LIMITED,
            f"{len(limits)} checks became harness-caused skips ({cause})",
            len(differences),
        )
    detail = (
        f"{len(differences)} checks unlike the release's, first: {differences[0]}"
        if (differences)
        else ""
    )
    return SURVIVED, detail, len(differences)


def crashed(rc: int) -> bool:
    """A judge's exit by a signal of its own (SIGSEGV, SIGABRT, SIGBUS...): not the overdue
    judge's SIGKILL, nor a stop's SIGINT or SIGTERM."""
    return rc < 0 and rc not in STOPPED and rc != -signal.SIGKILL


@dataclass
class _Pending:
    mutant: GeneratedMutant
    scratch: Path
    stage: int
    started: float
    said: dict = field(default_factory=dict)
    cold: bool = False  # judged again cold, after its warm judge crashed


def portable_detail(detail: str, scratch: Path) -> str:
    """A judge's message with the mutant's scratch folder (this machine's path, under the
    campaign's --out) named as such: records are stored in the repository and compared across
    machines."""
    return detail.replace(str(scratch), MUTANT_COPY)


def campaign(
    release: str,
    mutants: list[GeneratedMutant],
    reference: SliceResult,
    judges: Judges,
    work: Path,
    jobs: int,
    done: Callable[[MutationResult], None],
    reach: Optional[Reach] = None,
) -> None:
    """Judge each of `mutants` (up to `jobs` at once) at the stages `reach` says can reach it
    (every stage where None), calling `done` with each one's result as it is decided."""
    pending: dict[int, _Pending] = {}
    queue = list(mutants)

    def result(job: _Pending, status: str, detail: str = "", **fields) -> MutationResult:
        m = job.mutant
        return MutationResult(
            m.id, m.file, m.function, m.operator, m.occurrence, m.line, status,
            diff=job.said.get("diff", ""), cells=job.said.get("cells", {}),
            seconds=time.monotonic() - job.started,
            detail=portable_detail(detail, job.scratch), **fields,
        )  # fmt: skip

    def finish_one() -> None:
        pid, rc, output = judges.wait_any()
        job = pending.pop(pid)
        if rc in STOPPED:
            # The judge was stopped, not its mutant judged: a signal to the whole process group
            # (a CI timeout's SIGTERM) reaches the judges first. The campaign stops as the
            # signal asks, leaving the mutant undecided for --resume.
            shutil.rmtree(job.scratch, ignore_errors=True)
            raise Interrupted(signal.SIGTERM if rc == EXIT_TERMINATED else signal.SIGINT)
        told = job.scratch / MUTATED
        if not job.said:
            job.said = json.loads(told.read_text()) if told.is_file() else {}
        if not job.said:
            tail = (output.strip().splitlines() or [f"exit {rc}"])[-1]
            decided = result(job, LIMITED, detail=f"the mutant gave no result: {tail[:300]}")
        elif not job.said["applied"]:
            decided = result(job, NOT_APPLIED, detail="cosmic-ray applied no change")
        else:
            cells = Slice(*(tuple(job.said["cells"][k]) for k in ("pools", "dtypes", "backends")))
            out = job.scratch / f"out-{job.stage}"
            if crashed(rc) and not (judges.cold or job.cold):
                # A warm judge runs the copy in its own process, so the release's crash (an
                # interpreted kernel's stray pointer) ended the judge: judged again cold, the copy
                # runs in its SUT worker, whose crash kvh run reports as a finding, as it would.
                job.cold = True
                shutil.rmtree(out, ignore_errors=True)
                argv = _stage_argv(job.scratch / "release", cells, out, STAGES[job.stage])
                log = job.scratch / f"judge-{job.stage}-cold.log"
                pending[judges.start(argv, log, cold=True)] = job
                return
            judged = read_slice(rc, output, out, time.monotonic() - job.started)
            held_to = reference if STAGES[job.stage] is None else None
            status, detail, differing = status_of(judged, held_to, cells, output)
            if status == SURVIVED and job.stage + 1 < len(STAGES):
                job.stage += 1
                argv = _stage_argv(
                    job.scratch / "release", cells, job.scratch / f"out-{job.stage}",
                    STAGES[job.stage],
                )  # fmt: skip
                pending[judges.start(argv, job.scratch / f"judge-{job.stage}.log")] = job
                return
            if status == KILLED and job.stage > 0:
                status = KILLED_CI
            decided = result(
                job, status, profile=STAGES[job.stage] or "", checks=judged.checks,
                findings=judged.findings, plan_differences=differing, detail=detail,
            )  # fmt: skip
        shutil.rmtree(job.scratch, ignore_errors=True)
        done(decided)

    for mutant in queue:
        where, line, why = reach.of(mutant) if reach else (FIRST, mutant.line, "")
        if where == UNREACHED:
            done(unreached(mutant, release, reference.trails, line, why))
            continue
        stage = 1 if where == CI_ONLY else 0
        while len(pending) >= jobs:
            finish_one()
        scratch = work / f"mutant-{hashlib.sha1(mutant.id.encode()).hexdigest()[:12]}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)

        def task(mutant=mutant, scratch=scratch, stage=stage):
            return mutate_then_judge(mutant, release, scratch, reference.trails, stage)

        pending[judges.start(task, scratch / f"judge-{stage}.log")] = _Pending(
            mutant, scratch, stage, time.monotonic()
        )
    while pending:
        finish_one()


def prepared(
    release: str,
    universe: Slice,
    work: Path,
    say: Callable[[str], None],
    cold: bool,
    entry,
    measure_reach: bool = True,
) -> tuple[SliceResult, Judges, Optional[Reach]]:
    """The unmodified release over the universe with its trails, judges for its mutants, and
    (with `measure_reach`) the statements it ran at each stage."""
    shutil.rmtree(work, ignore_errors=True)  # a run reads every record under its folders
    work.mkdir(parents=True)
    say(f"judging the unmodified {release} over the universe with --trail")
    reference = universe_baseline(release, universe, work)
    if reference.verdict == "ERROR":
        raise RuntimeError(f"the unmodified {release} gave no verdict: {reference.detail}")
    reach = None
    if measure_reach:
        say(f"measuring which statements the unmodified {release} runs at each stage (--coverage)")
        reach = measured_reach(release, universe, work, STAGES)
    judges = prepared_judges(release, universe, reference, work, cold or entry is None, say, entry)
    return reference, judges, reach
