"""Run the release-source catalogue (mutants/release_source.py) against one SGLang release.

For each record: copy the release's `sglang/` package into a scratch folder (its sibling
dependencies symlinked, not copied), apply the record's transforms, and judge the copy as
`--sut sglang@DIR` in a `kvh run` child process: the same worker, loader and stand-ins any
`sglang@DIR` gets, so nothing here is a second way of loading a release. The unmodified release is
judged once on the same slice, for the real-code backend count a refactor must keep.

A child process rather than a call into harness.run: a mutated package must never be imported
into this process (it would shadow or mix with the installed sglang), and the child's parquet
files are the same records `kvh run` writes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from harness.run.edited_functions import Span, edited_spans, names_an_edited_function
from harness.run.release_copy import copy_release, release_folder
from mutants.source_edits import ReleaseMutant, SourceMove, TransformMissed

# The child's own exit codes: 0 pass, 1 findings; anything else is no verdict.
_VERDICTS = {0: "PASS", 1: "FINDING"}
# What names one check of a run's plan, and what it came to: a refactor's run must hold the
# same checks as the unmodified release's, each with the same outcome and the same skip.
PLAN_KEY = ("backend", "pool", "dtype", "sut", "engine", "era", "scenario", "mode")
Plan = dict  # PLAN_KEY values -> (outcome, skip kind, why skipped, known divergence)


@dataclass
class SliceResult:
    """What one `kvh run` over a slice said."""

    verdict: str  # PASS, FINDING, or ERROR (rc and stderr tail in detail)
    rc: int
    real_code: tuple[str, ...]
    checks: int
    findings: int
    finding_lines: tuple[str, ...]  # each finding row's text and release site, deduplicated
    seconds: float
    detail: str = ""
    plan: Plan = field(default_factory=dict)
    # (pool, dtype, backend) -> the release functions its checks ran, under --trail
    trails: dict = field(default_factory=dict)


@dataclass
class ReleaseMutantResult:
    name: str
    kind: str
    release: str
    applied: bool
    files_changed: int
    verdict: str  # PASS, FINDING, ERROR, or NOT_APPLICABLE (a transform missed)
    expected: str  # PASS for a refactor, FINDING for a fault
    ok: bool  # verdict == expected (and, for a refactor, the real-code count kept)
    real_code: int
    real_code_release: int
    names_file: Optional[bool]  # a fault's finding names the expected release file; None otherwise
    # A fault's finding names a line inside a function its edit changed (edited_functions.py);
    # None for a refactor.
    names_edit: Optional[bool]
    checks: int
    findings: int
    first_finding: str
    seconds: float
    detail: str = ""
    slice: dict = field(default_factory=dict)
    # Checks whose outcome or skip differs from the unmodified release's, or that only one of
    # the two runs holds (plan_difference); 0 for a refactor that keeps the plan row for row.
    plan_differences: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def apply_mutant(mutant: ReleaseMutant, package: Path) -> int:
    """Apply every edit of `mutant` to the package folder in place; returns how many files
    changed. Raises TransformMissed naming the edit that found nothing to change."""
    changed = 0
    for edit in mutant.edits:
        if edit.is_glob:
            hits = 0
            for path in sorted(package.glob(edit.path)):
                try:
                    text = edit.transform(path.read_text())
                except TransformMissed:
                    continue
                path.write_text(text)
                hits += 1
            if hits == 0:
                raise TransformMissed(f"{mutant.name}: no file under {edit.path} matches")
            changed += hits
            continue
        path = package / edit.path
        if not path.is_file():
            raise TransformMissed(f"{mutant.name}: the release has no {edit.path}")
        try:
            if isinstance(edit, SourceMove):
                changed += _move(edit, package, path)
                continue
            path.write_text(edit.transform(path.read_text()))
        except TransformMissed as missed:
            raise TransformMissed(f"{mutant.name}: {edit.path}: {missed}") from None
        changed += 1
    return changed


def fault_spans(mutant: ReleaseMutant, original: Path, edited: Path) -> list[Span]:
    """The functions a fault's edits changed in the copy `edited` of the package `original`."""
    spans: list[Span] = []
    for edit in mutant.edits:
        if isinstance(edit, SourceMove) or edit.is_glob:
            continue
        before = (original / edit.path).read_text()
        spans += edited_spans(edited / edit.path, before, (edited / edit.path).read_text())
    return spans


def _move(move: SourceMove, package: Path, path: Path) -> int:
    """Write the moved definitions to their new module and the re-export in their place: two
    files changed."""
    target = package / move.to
    if target.exists():
        raise TransformMissed(f"{move.to} exists already")
    dotted = ".".join(("sglang", *Path(move.to).with_suffix("").parts))
    kept, moved = move.split(path.read_text(), dotted)
    target.write_text(moved)
    path.write_text(kept)
    return 2


def _finding_lines(checks: pd.DataFrame) -> tuple[str, ...]:
    rows = checks[checks["outcome"] == "finding"]
    lines: list[str] = []
    for _, row in rows.iterrows():
        text = " ".join(str(row[c]) for c in ("findings", "detail") if row.get(c))
        if text and text not in lines:
            lines.append(text)
    return tuple(lines)


def names_release_file(file: str, lines: tuple[str, ...]) -> bool:
    """Whether a finding names `file` with a line, as a whole name: swa_memory_pool.py:270
    does not name memory_pool.py."""
    named = re.compile(rf"(?<![\w/]){re.escape(file)}:\d+")
    return any(named.search(line) for line in lines)


def check_plan(checks: pd.DataFrame) -> Plan:
    """Each check of a run, keyed by what it ran, with its outcome, skip kind, the skip's reason
    (the text before its first colon: a declared skip's name, or what a driver gap is) and known
    divergence. The SUT column names any copy of sglang as sglang: a copy is judged as the
    release it was made from."""
    plan: Plan = {}
    for row in checks.to_dict("records"):
        sut = str(row["sut"])
        key = tuple(
            "sglang" if c == "sut" and sut.startswith("sglang") else row[c] for c in PLAN_KEY
        )
        skipped = row["outcome"] == "skipped"
        why = str(row.get("detail") or "").split(":")[0] if skipped else ""
        plan[key] = (
            row["outcome"],
            str(row.get("skip_kind") or ""),
            why,
            row.get("divergence") or "",
        )
    return plan


@dataclass(frozen=True)
class Slice:
    """The cells a child run judges: every pool x dtype x backend of these."""

    pools: tuple[str, ...]
    dtypes: tuple[str, ...]
    backends: tuple[str, ...]

    def holds(self, key: tuple) -> bool:
        """Whether a plan key (PLAN_KEY's order) is one of this slice's cells."""
        values = dict(zip(PLAN_KEY, key))
        return (
            values["pool"] in self.pools
            and values["dtype"] in self.dtypes
            and values["backend"] in self.backends
        )


def cell_trails(checks: pd.DataFrame) -> dict[tuple[str, str, str], set[str]]:
    """Each cell's release functions, as `kvh run --trail` recorded them in its check rows
    ('memory_pool.py:2891 MHATokenToKVPool.set_kv_buffer'), without their line numbers."""
    trails: dict[tuple[str, str, str], set[str]] = {}
    if "release_functions" not in checks:
        return trails
    for row in checks.to_dict("records"):
        ran = trails.setdefault((row["pool"], row["dtype"], row["backend"]), set())
        for function in str(row.get("release_functions") or "").split("; "):
            if function:
                place, _, name = function.partition(" ")
                ran.add(f"{place.split(':')[0]} {name}")
    return trails


def plan_difference(release: Plan, mutant: Plan) -> list[str]:
    """The checks that differ between two runs' plans, one line each, sorted."""
    lines = []
    for key in sorted(set(release) | set(mutant), key=str):
        before, after = release.get(key), mutant.get(key)
        if before != after:
            lines.append(f"{'/'.join(map(str, key))}: {before} -> {after}")
    return lines


def slice_of(mutant: ReleaseMutant) -> Slice:
    return Slice(mutant.pools, mutant.dtypes, mutant.backends)


# The line `kvh run` ends with (harness/cli/run.py): where its files are.
RESULTS = "results: "


def slice_argv(spec: str, cells: Slice, out: Path, trail: bool = False) -> list[str]:
    """kvh's arguments for `kvh run --sut SPEC` over the slice's pools, dtypes and backends;
    `trail`: with --trail, so that each check row names the release functions it ran."""
    return [
        "run", "--sut", spec,
        "--pool", ",".join(cells.pools), "--dtype", ",".join(cells.dtypes),
        "--backend", ",".join(cells.backends), "--out", str(out), *(["--trail"] if trail else []),
    ]  # fmt: skip


def run_slice(
    spec: str, cells: Slice, out: Path, trail: bool = False, extra: tuple[str, ...] = ()
) -> SliceResult:
    """`kvh run` over the slice (slice_argv, then `extra`) in a child process."""
    start = time.monotonic()
    command = [sys.executable, "-m", "harness", *slice_argv(spec, cells, out, trail), *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    return read_slice(done.returncode, done.stderr or done.stdout, out, time.monotonic() - start)


def read_slice(rc: int, output: str, out: Path, seconds: float) -> SliceResult:
    """What a `kvh run` that exited with `rc` and printed `output` wrote under `out`."""
    verdict = _VERDICTS.get(rc, "ERROR")
    suts = sorted(out.glob("sut-*.parquet"))
    checks = sorted(out.glob("check-*.parquet"))
    if verdict == "ERROR" or not suts or not checks:
        # Where the scratch run left its files says nothing of why it gave no verdict, and names
        # a path of this machine that a stored campaign would carry.
        lines = [line for line in output.strip().splitlines() if not line.startswith(RESULTS)]
        tail = lines[-3:]
        return SliceResult("ERROR", rc, (), 0, 0, (), seconds, " | ".join(tail))
    sut_rows = pd.read_parquet(suts[0])
    real = str(sut_rows.iloc[0].get("real_code") or "")
    frame = pd.concat([pd.read_parquet(p) for p in checks])
    judged = frame[frame["outcome"] != "skipped"]
    return SliceResult(
        verdict=verdict,
        rc=rc,
        real_code=tuple(n for n in real.split(",") if n),
        checks=len(judged),
        findings=int((frame["outcome"] == "finding").sum()),
        finding_lines=_finding_lines(frame),
        seconds=seconds,
        plan=check_plan(frame),
        trails=cell_trails(frame),
    )


def run_release_mutant(
    mutant: ReleaseMutant,
    release: str,
    work: Path,
    baselines: dict[tuple, SliceResult],
) -> ReleaseMutantResult:
    """Copy `release`, apply `mutant`, judge the copy and (once per slice, cached in
    `baselines`) the unmodified release."""
    expected = "PASS" if mutant.kind == "refactor" else "FINDING"
    key = (release, mutant.pools, mutant.dtypes, mutant.backends)
    start = time.monotonic()
    folder = release_folder(release)
    scratch = Path(tempfile.mkdtemp(prefix=f"kvh-{mutant.name}-", dir=work))
    copy = copy_release(folder, scratch / "release", with_siblings=release != "sglang")
    base = dict(
        name=mutant.name, kind=mutant.kind, release=release, expected=expected,
        slice={"pools": list(mutant.pools), "dtypes": list(mutant.dtypes),
               "backends": list(mutant.backends)},
    )  # fmt: skip
    try:
        changed = apply_mutant(mutant, copy / "sglang")
    except TransformMissed as missed:
        shutil.rmtree(scratch, ignore_errors=True)
        return ReleaseMutantResult(
            **base, applied=False, files_changed=0, verdict="NOT_APPLICABLE", ok=False,
            real_code=0, real_code_release=0, names_file=None, names_edit=None, checks=0,
            findings=0,
            first_finding="", seconds=time.monotonic() - start, detail=str(missed),
        )  # fmt: skip
    if key not in baselines:
        baselines[key] = run_slice(release, slice_of(mutant), scratch / "out-release")
    reference = baselines[key]
    judged = run_slice(f"sglang@{copy}", slice_of(mutant), scratch / "out-mutant")
    names_file = names_edit = None
    if mutant.kind == "fault":
        names_file = names_release_file(mutant.expect_file, judged.finding_lines)
        spans = fault_spans(mutant, folder / "sglang", copy / "sglang")
        names_edit = names_an_edited_function(spans, judged.finding_lines)
    kept = set(judged.real_code) == set(reference.real_code)
    differences = plan_difference(reference.plan, judged.plan) if judged.plan else []
    ok = judged.verdict == expected and (mutant.kind == "fault" or (kept and not differences))
    detail = judged.detail or "; ".join(
        ([] if kept else [f"real code {sorted(judged.real_code)} vs {sorted(reference.real_code)}"])
        + (
            [f"{len(differences)} checks differ from the release's, first: {differences[0]}"]
            if differences and mutant.kind == "refactor"
            else []
        )
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return ReleaseMutantResult(
        **base, applied=True, files_changed=changed, verdict=judged.verdict, ok=ok,
        real_code=len(judged.real_code), real_code_release=len(reference.real_code),
        names_file=names_file, names_edit=names_edit, checks=judged.checks,
        findings=judged.findings,
        first_finding=judged.finding_lines[0][:400] if judged.finding_lines else "",
        seconds=time.monotonic() - start, detail=detail, plan_differences=len(differences),
    )  # fmt: skip


def rates(results: list[ReleaseMutantResult]) -> dict:
    """Refactors passed and faults caught, of those whose transforms applied."""
    applied = [r for r in results if r.applied]
    refactors = [r for r in applied if r.kind == "refactor"]
    faults = [r for r in applied if r.kind == "fault"]
    return {
        "refactors_passed": f"{sum(r.ok for r in refactors)}/{len(refactors)}",
        "faults_caught": f"{sum(r.ok for r in faults)}/{len(faults)}",
        "faults_naming_file": f"{sum(bool(r.names_file) for r in faults)}/{len(faults)}",
        "faults_naming_edit": f"{sum(bool(r.names_edit) for r in faults)}/{len(faults)}",
        "not_applicable": [r.name for r in results if not r.applied],
    }
