"""The rename campaign: each private name of a release's write path (mutants/release_renames.py)
renamed at every use by rope, and each renamed copy judged like a catalogue refactor.

For each name: copy the release's `sglang/` package (its files hard-linked where the filesystem
allows, every file the rename may change copied for real), rename each of its definitions with
rope (in its class hierarchy; an occurrence rope cannot resolve is renamed where it is an
attribute access, so a use through an untyped object is renamed too, a parameter of the same
spelling is not), rename the string literals that name it exactly (a `getattr(batch,
"name")` is a use), and judge the copy as `sglang@DIR` on the sentinel slice plus every cell
whose release trail reaches a function the rename touched. The unmodified release is judged once
with `kvh run --trail` over the campaign's universe: its rows give each cell's trail and the
plan each copy must match row for row (harness/run/release_source.py plan_difference).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from harness.run.edited_functions import touched_functions
from harness.run.forked_judges import Judges, learn_modules, run_once
from harness.run.release_copy import release_folder, sparse_copy
from harness.run.release_source import (
    Slice,
    SliceResult,
    plan_difference,
    read_slice,
    run_slice,
    slice_argv,
)
from harness.run.rope_rename import files_reaching, package_texts, rename_in_copy
from mutants.release_renames import PrivateName
from pools.kinds.layout import UNIFIED_MHA
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA

# The cells every renamed copy is judged on, whatever its trail: a token-major, a SWA, a latent
# and a unified pool (the one that reads the plan's physical mark), through the plain models.
SENTINEL = Slice(names(MHA, SWA_MHA, MLA, UNIFIED_MHA), ("bf16",), ("plain", "plain_mla"))
SUFFIX = "_kvh_renamed"
T = TypeVar("T")


@dataclass
class RenameResult:
    name: str
    new_name: str
    kinds: tuple[str, ...]
    verdict: str  # PASS, FINDING, ERROR, NOT_RENAMED (no file changed) or UNREACHED (no cell)
    ok: bool  # PASS with the release's plan row for row and its real-code backends
    files_changed: int
    touched: tuple[str, ...]  # functions whose text the rename changed ('memory_pool.py Q.f')
    cells: dict = field(default_factory=dict)  # the slice judged
    checks: int = 0
    plan_differences: int = 0
    real_code: int = 0
    real_code_release: int = 0
    rename_seconds: float = 0.0
    judge_seconds: float = 0.0
    renamed_by: str = ""  # Renamed.by
    detail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def sentinel_within(sentinel: Slice, universe: Slice) -> Slice:
    """The sentinel's pools, dtypes and backends that the universe holds: the release's plan is
    known only over the universe, so a cell outside it could only differ from a plan never made."""
    return Slice(
        tuple(p for p in sentinel.pools if p in universe.pools),
        tuple(d for d in sentinel.dtypes if d in universe.dtypes),
        tuple(b for b in sentinel.backends if b in universe.backends),
    )


def judged_slice(
    touched: set[str], trails: dict[tuple[str, str, str], set[str]], sentinel: Slice
) -> Slice:
    """The sentinel slice, widened by every cell whose trail reaches a touched function (as a
    cross product: a child run takes lists of pools, dtypes and backends). An empty axis means
    no cell: the sentinel was outside the universe and no trail reached what the rename touched."""
    reached = [cell for cell, ran in trails.items() if ran & touched]
    pools = dict.fromkeys(sentinel.pools + tuple(c[0] for c in reached))
    dtypes = dict.fromkeys(sentinel.dtypes + tuple(c[1] for c in reached))
    backends = dict.fromkeys(sentinel.backends + tuple(c[2] for c in reached))
    return Slice(tuple(pools), tuple(dtypes), tuple(backends))


def _no_cell(cells: Slice) -> bool:
    return not (cells.pools and cells.dtypes and cells.backends)


def universe_baseline(release: str, universe: Slice, work: Path) -> SliceResult:
    """The unmodified release over the universe, with each check's trail, by a cold `kvh run`."""
    return run_slice(release, universe, work / "out-release", trail=True)


def prepared_judges(
    release: str,
    universe: Slice,
    reference: SliceResult,
    work: Path,
    cold: bool,
    say: Callable[[str], None],
    entry: Callable[[list[str]], int],
) -> Judges:
    """Judges forked from this process once it is warm (harness/run/forked_judges.py), kept warm
    only when an unmodified copy judged warm over the universe holds the cold run's plan row for
    row and its real-code backends; cold judges otherwise, saying why."""
    source = release_folder(release)
    judges = Judges(source, entry, cold=cold)
    if cold:
        return judges
    say(f"learning what a judge of {release} imports (one in-process run over the universe)")
    try:
        learnt = learn_modules(
            release, slice_argv(release, universe, work / "out-learn"), source, work
        )
    except RuntimeError as error:
        say(f"{error}: judging cold")
        judges.cold = True
        return judges
    try:
        judges.warm(learnt)
    except RuntimeError as error:
        say(f"{error}: judging cold")
        judges.cold = True
        return judges
    shutil.rmtree(work / "control", ignore_errors=True)
    control = sparse_copy(source, work / "control", [], with_siblings=release != "sglang")
    out = work / "out-control"
    rc, output, seconds = run_once(
        judges, slice_argv(f"sglang@{control}", universe, out), work / "control.log"
    )
    judged = read_slice(rc, output, out, seconds)
    shutil.rmtree(control, ignore_errors=True)
    differences = plan_difference(reference.plan, judged.plan) if judged.verdict != "ERROR" else []
    if (
        judged.verdict != reference.verdict
        or differences
        or judged.real_code != reference.real_code
    ):
        why = (
            differences[0]
            if differences
            else f"real code {judged.real_code} vs {reference.real_code}"
            if judged.verdict == reference.verdict
            else f"{judged.verdict}: {judged.detail}"
        )
        say(f"a warm judge of the unmodified release is not the cold run ({why}): judging cold")
        judges.cold = True
    else:
        say(
            f"warm judges: {judges.warmed} modules imported once ({len(judges.not_warmed)} left "
            "to each judge), the unmodified release judged "
            f"warm as cold ({judged.checks} checks row for row, {seconds:.0f} s)"
        )
    return judges


@dataclass
class _Pending:
    private: PrivateName
    new_name: str
    scratch: Path
    started: float


# What a judge's child tells the campaign of its rename (it renames its own copy, in parallel).
RENAMED = "renamed.json"


def _rename_then_judge(
    private: PrivateName,
    new_name: str,
    release: str,
    scratch: Path,
    texts: dict[Path, str],
    trails: dict[tuple[str, str, str], set[str]],
    sentinel: Slice,
) -> Optional[list[str]]:
    """In a judge's child: copy the release, rename `private` in the copy, write what changed to
    `scratch/RENAMED`, and give the argv that judges the copy (None where nothing changed)."""
    start = time.monotonic()
    source = release_folder(release)
    naming = files_reaching(source / "sglang", private, texts)
    edited = [Path("sglang") / f for f in naming]
    copy = sparse_copy(source, scratch / "release", edited, with_siblings=release != "sglang")
    renamed = rename_in_copy(copy, private, new_name, naming)
    touched = sorted(touched_functions(renamed.changed))
    cells = judged_slice(set(touched), trails, sentinel)
    said = {
        "files_changed": len(renamed.changed),
        "touched": touched,
        "by": renamed.by,
        "cells": asdict(cells),
        "rename_seconds": time.monotonic() - start,
    }
    (scratch / RENAMED).write_text(json.dumps(said))
    if not renamed.changed or _no_cell(cells):
        return None
    return slice_argv(f"sglang@{copy}", cells, scratch / "out")


def _verdict(
    pending: _Pending, said: dict, judged: SliceResult, reference: SliceResult
) -> RenameResult:
    cells = Slice(*(tuple(said["cells"][key]) for key in ("pools", "dtypes", "backends")))
    expected = {key: value for key, value in reference.plan.items() if cells.holds(key)}
    differences = plan_difference(expected, judged.plan) if judged.verdict != "ERROR" else []
    kept = set(judged.real_code) == set(reference.real_code)
    ok = judged.verdict == "PASS" and kept and not differences
    detail = judged.detail or "; ".join(
        ([] if kept else [f"real code {sorted(judged.real_code)} vs {sorted(reference.real_code)}"])
        + ([f"{len(differences)} checks differ, first: {differences[0]}"] if differences else [])
        + ([judged.finding_lines[0][:300]] if judged.finding_lines else [])
    )
    private, rename_seconds = pending.private, said["rename_seconds"]
    return RenameResult(
        private.name, pending.new_name, private.kinds, judged.verdict, ok, said["files_changed"],
        tuple(said["touched"]), said["cells"], judged.checks, len(differences),
        len(judged.real_code), len(reference.real_code), rename_seconds,
        judged.seconds - rename_seconds, said["by"], detail,
    )  # fmt: skip


def _unjudged(pending: _Pending, said: Optional[dict], rc: int, output: str) -> RenameResult:
    """A child that changed no file, that ended before it said what it renamed, or whose rename
    no cell of the universe reaches."""
    name, new_name, kinds = pending.private.name, pending.new_name, pending.private.kinds
    if said is None:
        tail = output.strip().splitlines()[-1:] or [f"exit {rc}"]
        return RenameResult(name, new_name, kinds, "ERROR", False, 0, (),
                            detail=f"the rename gave no result: {tail[0][:300]}")  # fmt: skip
    if said["files_changed"]:
        return RenameResult(
            name, new_name, kinds, "UNREACHED", False, said["files_changed"],
            tuple(said["touched"]), said["cells"], rename_seconds=said["rename_seconds"],
            renamed_by=said["by"], detail="no cell of the universe reaches a function it "
            "touched, and the universe holds no sentinel cell: widen --pool/--dtype/--backend",
        )  # fmt: skip
    return RenameResult(name, new_name, kinds, "NOT_RENAMED", False, 0, (),
                        rename_seconds=said["rename_seconds"], renamed_by=said["by"],
                        detail=f"{said['by']} changed no file")  # fmt: skip


def campaign(
    release: str,
    names: list[PrivateName],
    universe: Slice,
    work: Path,
    jobs: int = 2,
    sentinel: Slice = SENTINEL,
    progress: Callable[[RenameResult, int, int], None] = lambda result, done, total: None,
    say: Callable[[str], None] = lambda line: None,
    cold: bool = False,
    entry: Optional[Callable[[list[str]], int]] = None,
) -> tuple[SliceResult, list[RenameResult]]:
    """Judge every name's rename: up to `jobs` children at once, each forked from this process
    (harness/run/forked_judges.py), renames its name in its own copy with rope and judges it;
    `cold` (or no kvh `entry` to call) execs a cold `kvh run` for the judging instead."""
    import rope.refactor.rename  # noqa: F401 - imported once here, not in every child

    shutil.rmtree(work, ignore_errors=True)  # a run reads every record under its folders
    work.mkdir(parents=True)
    say(f"judging the unmodified {release} over the universe with --trail")
    reference = universe_baseline(release, universe, work)
    if reference.verdict == "ERROR":
        raise RuntimeError(f"the unmodified {release} gave no verdict: {reference.detail}")
    judges = prepared_judges(release, universe, reference, work, cold or entry is None, say, entry)
    within = sentinel_within(sentinel, universe)
    if within != sentinel:
        say(
            f"the sentinel slice within the universe: {within.pools} x {within.dtypes} x "
            f"{within.backends} (of {sentinel.pools} x {sentinel.dtypes} x {sentinel.backends})"
        )
    texts = package_texts(release_folder(release) / "sglang")
    pending: dict[int, _Pending] = {}
    results: list[RenameResult] = []

    def finish_one() -> None:
        pid, rc, output = judges.wait_any()
        done = pending.pop(pid)
        told = done.scratch / RENAMED
        said = json.loads(told.read_text()) if told.is_file() else None
        unjudged = said is None or not said["files_changed"]
        if unjudged or _no_cell(Slice(**said["cells"])):
            results.append(_unjudged(done, said, rc, output))
        else:
            out = done.scratch / "out"
            judged = read_slice(rc, output, out, time.monotonic() - done.started)
            results.append(_verdict(done, said, judged, reference))
        shutil.rmtree(done.scratch, ignore_errors=True)
        progress(results[-1], len(results), len(names))

    try:
        for private in names:
            new_name = f"{private.name}{SUFFIX}"
            scratch = work / f"rename-{private.record}"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            while len(pending) >= jobs:
                finish_one()

            def task(private=private, new_name=new_name, scratch=scratch):
                return _rename_then_judge(
                    private, new_name, release, scratch, texts, reference.trails, within
                )

            pid = judges.start(task, scratch / "judge.log")
            pending[pid] = _Pending(private, new_name, scratch, time.monotonic())
        while pending:
            finish_one()
    finally:
        judges.stop_all()  # a signal, or an error: no judge outlives the campaign
    return reference, results


def sample(
    items: list[T], count: Optional[int], seed: int, key: Callable[[T], Any] = attrgetter("name")
) -> list[T]:
    """`count` items drawn with `seed`, in `key`'s order (all of them, in order, where count is
    None)."""
    import random

    if count is None or count >= len(items):
        return items
    return sorted(random.Random(seed).sample(items, count), key=key)
