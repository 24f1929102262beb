"""Generated faults of a release: cosmic-ray's mutation operators over every release function that
the harness's run reaches.

The scope is read from a release trail (harness/run/release_trail.py): each check row names the
release functions its writes first called, as 'file.py Qual.name'. A trail names a file by its
base name only, so a function whose base name and qualified name more than one file of the
package defines (`__init__.py __getattr__`) cannot be placed: it is counted as unplaced, never
guessed. cosmic-ray (its operators, its occurrence numbering, its WorkItem records) makes and
numbers the mutants; this module only keeps those that land inside a reached function. Read from
the release's source; no import of it, and no harness.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class GeneratedMutant:
    file: str  # relative to the `sglang` package: "srt/mem_cache/memory_pool.py"
    function: str  # as a trail names it: "memory_pool.py MHATokenToKVPool.set_kv_buffer"
    operator: str  # cosmic-ray's operator: "core/ReplaceBinaryOperator_Add_Sub"
    occurrence: int  # cosmic-ray's number for this operator's place in the file
    line: int
    column: int
    end: tuple[int, int]  # cosmic-ray's end position (line, column)

    @property
    def id(self) -> str:
        """Unique within one release: cosmic-ray numbers an operator's places per file."""
        return f"{self.file}:{self.operator}:{self.occurrence}"


@dataclass(frozen=True)
class Scope:
    mutants: list[GeneratedMutant]
    files: dict[str, list[str]]  # each file mutated -> the reached functions it holds
    unplaced: dict[str, int]  # a reached function no single file holds -> files that define it


def function_spans(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function of a module, decorators
    included (the spans a trail's names and an edit's lines are matched against)."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTIONS + (ast.ClassDef,)):
                name = f"{prefix}{child.name}"
                if isinstance(child, FUNCTIONS):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    found.append((first, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return found


def innermost(spans: list[tuple[int, int, str]], line: int) -> str:
    """The qualified name of the innermost function around `line` ("" outside any)."""
    around = [s for s in spans if s[0] <= line <= s[1]]
    return min(around, key=lambda s: s[1] - s[0])[2] if around else ""


def place(package: Path, reached: set[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each reached function's file, relative to `package` (file -> its reached functions), and
    the functions that no single file holds (-> how many files define them)."""
    wanted: dict[str, set[str]] = {}
    for name in reached:
        base, _, qualified = name.partition(" ")
        wanted.setdefault(base, set()).add(qualified)
    holders: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name not in wanted:
            continue
        defined = {s[2] for s in function_spans(path.read_text(errors="replace"))}
        for qualified in wanted[path.name] & defined:
            holders.setdefault(f"{path.name} {qualified}", []).append(
                str(path.relative_to(package))
            )
    files: dict[str, list[str]] = {}
    unplaced: dict[str, int] = {}
    for name in sorted(reached):
        held = holders.get(name, [])
        if len(held) == 1:
            files.setdefault(held[0], []).append(name)
        else:
            unplaced[name] = len(held)
    return files, unplaced


def generated_mutants(package: Path, reached: set[str]) -> Scope:
    """Every mutant cosmic-ray's core operators make inside a reached function of `package`."""
    from cosmic_ray.commands.init import _all_work_items  # cosmic-ray's own enumeration

    files, unplaced = place(package, reached)
    mutants: list[GeneratedMutant] = []
    for relative, functions in files.items():
        path = package / relative
        spans = function_spans(path.read_text(errors="replace"))
        inside = {name.partition(" ")[2] for name in functions}
        for item in _all_work_items([path], {}):
            (spec,) = item.mutations
            line, column = spec.start_pos
            qualified = innermost(spans, line)
            if qualified in inside:
                mutants.append(
                    GeneratedMutant(
                        relative,
                        f"{path.name} {qualified}",
                        spec.operator_name,
                        spec.occurrence,
                        line,
                        column,
                        tuple(spec.end_pos),
                    )  # fmt: skip
                )
    return Scope(mutants, files, unplaced)


def mutated_text(text: str, mutant: GeneratedMutant) -> str:
    """The module's text with `mutant` applied by cosmic-ray ("" where it no longer applies)."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    operator = cosmic_ray.plugins.get_operator(mutant.operator)()
    return mutate_code(text, operator, mutant.occurrence) or ""
