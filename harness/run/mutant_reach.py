"""Which stage of the campaign can reach a mutant: the statements the unmodified release ran,
measured by coverage.py (`kvh run --coverage`, harness/run/release_lines.py) over the campaign's
universe at the builtin scenarios and again at `--profile ci`.

A mutant edits one statement. Where no check of the unmodified release ran that statement, a
check of the mutant runs as the release's does up to the point it would, so it runs the same:
at the builtin scenarios, which are the same for both, that is certain, and the mutant's run there
is left out. At `--profile ci` both runs draw the same derandomised examples (the profile fixes
their count), but a mutant's run that fails shrinks into scenarios the release's never drew, so
that stage still judges it; a statement neither run ran is the campaign's UNREACHED
status, which is never a kill, and its row says which of the lines no check reached could not
run on this machine at all (harness/report/release_lines.py). Only a statement inside a
function's body is judged this way: a def line, its defaults and decorators run at import,
before the measure starts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from harness.report.release_lines import DATA_FOLDER, measured_data, measured_flags, release_lines
from harness.run.release_copy import release_folder
from harness.run.release_source import Slice, run_slice
from mutants.generated import GeneratedMutant
from reports.mutation_score import UNREACHED

FIRST, CI_ONLY = "first", "ci_only"


@dataclass
class Ran:
    """One measured run's statements, by file relative to the `sglang` package."""

    run: dict[str, set[int]] = field(default_factory=dict)
    statements: dict[str, set[int]] = field(default_factory=dict)  # of the functions listed
    cannot_run_here: dict[str, dict[int, str]] = field(default_factory=dict)  # line -> why


def ran(out: Path, root: Path) -> Ran:
    """What the `kvh run --coverage` whose --out was `out` ran of the release under `root` (the
    folder holding its `sglang`)."""
    folder = out / DATA_FOLDER
    measured = Ran()
    for file in release_lines(
        measured_data(folder), measured_flags(folder), str(root), folders=None
    ):
        relative = file.file.partition("/")[2]
        for function in file.functions:
            measured.run.setdefault(relative, set()).update(function.run)
            measured.statements.setdefault(relative, set()).update(
                function.run + function.not_reached + list(function.cpu_unreachable)
            )
            measured.cannot_run_here.setdefault(relative, {}).update(function.cpu_unreachable)
    return measured


def body_statement(tree: ast.Module, line: int) -> Optional[int]:
    """The first line of the innermost statement around `line` inside a function's body (None
    where `line` is outside every function body, or on a def's own line)."""
    found: Optional[int] = None

    def visit(node: ast.AST, in_body: bool) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                if not child.lineno <= line <= (child.end_lineno or child.lineno):
                    continue
                if in_body:
                    found = child.lineno
                function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                if function and line == child.lineno and not in_body:
                    return
                visit(child, in_body or function)
            else:
                visit(child, in_body)

    visit(tree, False)
    return found


@dataclass
class Reach:
    """The campaign's two measured runs of the unmodified release."""

    first: Ran  # at the builtin scenarios
    ci: Ran  # at --profile ci
    package: Path  # the release's `sglang` folder
    _trees: dict[str, ast.Module] = field(default_factory=dict)

    def of(self, mutant: GeneratedMutant) -> tuple[str, int, str]:
        """(FIRST, line, "") where the builtin scenarios ran the mutant's statement (its first
        line) or it was not measured; (CI_ONLY, line, "") where only --profile ci ran it;
        (UNREACHED, line, why) otherwise, `why` saying why it cannot run here ("" if it can)."""
        statements = self.first.statements.get(mutant.file, set()) | self.ci.statements.get(
            mutant.file, set()
        )
        if not statements:
            return FIRST, mutant.line, ""
        if mutant.file not in self._trees:
            text = (self.package / mutant.file).read_text(errors="replace")
            self._trees[mutant.file] = ast.parse(text)
        line = body_statement(self._trees[mutant.file], mutant.line)
        if line is None or line not in statements:
            return FIRST, mutant.line, ""
        if line in self.first.run.get(mutant.file, set()):
            return FIRST, line, ""
        if line in self.ci.run.get(mutant.file, set()):
            return CI_ONLY, line, ""
        why = [run.cannot_run_here.get(mutant.file, {}).get(line) for run in (self.first, self.ci)]
        return UNREACHED, line, why[0] or why[1] or ""


def measured_reach(
    release: str, universe: Slice, work: Path, profiles: tuple[Optional[str], Optional[str]]
) -> Reach:
    """The unmodified release over the universe under `kvh run --coverage`, once at each of the
    campaign's two stages' `profiles` (None: the builtin scenarios)."""
    root = release_folder(release)
    measured = []
    for profile in profiles:
        out = work / f"out-lines-{profile or 'builtin'}"
        extra = ("--coverage",) + (("--profile", profile) if profile else ())
        result = run_slice(release, universe, out, extra=extra)
        if result.verdict == "ERROR":
            raise RuntimeError(f"the unmodified {release} under --coverage: {result.detail}")
        measured.append(ran(out, root))
    return Reach(measured[0], measured[1], root / "sglang")
