"""A release's write-path lines as a run's checks executed them (`kvh run --coverage`), per file
and per function, from the data its workers measured (harness/run/release_lines.py).

A function is listed where its body ran, and so is every pool write door (the census's,
harness/sut/probe/write_doors.py) whether it ran or not. Its lines that did not run are split in
two: those under a branch whose test is False on this machine, by the module's own globals as it
set them at import here (`if _is_cuda and ...:`), each with that test as its reason; and the rest,
which no check of the run reached. Nothing is classified by name: a test the globals cannot
decide is "not reached".
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from backends.sglang_names import WRITE_PATH_PACKAGES
from harness.sut.probe.write_doors import (
    NEEDS_DEVICE,
    NO_CONSTRUCT,
    Door,
    measured,
    write_doors,
)

DATA_FOLDER = "release-lines-data"  # under the run's --out, emptied as a measuring run starts
DATA_FILE = ".coverage"  # coverage.py adds a suffix per process
FLAGS_PREFIX = "flags-"
FORWARD = re.compile(r"forward_\w+")
TEST_SHOWN = 72  # characters of a branch's test quoted as its reason
# The files the summary lists, from `sglang/` on (the workers measure the whole package).
WRITE_PATH_FOLDERS = tuple(name.replace(".", "/") + "/" for name in WRITE_PATH_PACKAGES)


@dataclass
class FunctionLines:
    name: str  # Class.method as the file defines it
    first_line: int
    door: bool  # a pool write door, as the census finds them
    run: list[int]
    not_reached: list[int]
    cpu_unreachable: dict[int, str] = field(default_factory=dict)  # line -> why


@dataclass
class FileLines:
    file: str  # from `sglang/` on
    statements: int
    run: int
    functions: list[FunctionLines]


def measured_data(folder: Path) -> Any:
    """The workers' data in `folder`, combined into one coverage.py data set."""
    import coverage

    measured = coverage.Coverage(data_file=str(folder / DATA_FILE), config_file=False)
    measured.combine([str(folder)], keep=True)
    return measured


def release_lines(
    measured: Any,
    flags: dict[str, dict[str, bool]],
    root: str,
    folders: Optional[tuple[str, ...]] = WRITE_PATH_FOLDERS,
) -> list[FileLines]:
    """Every measured write-path file of the release under `root` (the folder holding its
    `sglang`) with a function to list (`folders`: those the summary keeps to; None: every
    measured file); `flags`: each module's machine flags, by its file."""
    from coverage.exceptions import CoverageException

    root = str(Path(root).resolve())
    # The write doors as the census finds them (set_*buffer* methods of the pool classes), and
    # their files even where no check entered them: their lines are lines the run did not reach.
    doors = {
        (door.file, f"{door.cls}.{door.method}"): _needs_other_hardware(door)
        for door in write_doors(Path(root), ())
    }
    pools = {f"{root}/{file}" for file, _ in doors}
    files = []
    for path in sorted(set(measured.get_data().measured_files()) | pools):
        if not path.startswith(f"{root}/sglang/") or not Path(path).is_file():
            continue
        if folders is not None and not path[len(root) + 1 :].startswith(folders):
            continue
        try:
            _, statements, _, missing, _ = measured.analysis2(path)
        except CoverageException:  # not Python this interpreter parses
            continue
        relative = path[len(root) + 1 :]  # from `sglang/` on, as the census names files
        ran = set(statements) - set(missing)
        here = {name: why for (file, name), why in doors.items() if file == relative}
        functions = _functions(Path(path), set(statements), ran, flags.get(path, {}), here)
        if functions:
            files.append(FileLines(relative, len(statements), len(ran), functions))
    return files


def measured_flags(folder: Path) -> dict[str, dict[str, bool]]:
    """Every worker's machine flags in `folder` (harness/run/release_lines.py), by module file."""
    merged: dict[str, dict[str, bool]] = {}
    for file in sorted(folder.glob(f"{FLAGS_PREFIX}*.json")):
        for path, values in json.loads(file.read_text()).items():
            merged.setdefault(path, {}).update(values)
    return merged


def _needs_other_hardware(door: Door) -> str:
    """Why none of a door's lines can run on this machine, where the census measured that its
    class does not construct, or its store needs a GPU, here ("" where it did not)."""
    status, note = measured(door.file, door.cls, door.method)
    return f"{status}: {note}" if status in (NEEDS_DEVICE, NO_CONSTRUCT) else ""


def _functions(
    path: Path, statements: set[int], ran: set[int], flags: dict[str, bool], doors: dict[str, str]
) -> list[FunctionLines]:
    """`doors`: the file's write doors, each with why it cannot run here ("" where it can)."""
    tree = ast.parse(path.read_text(errors="replace"))
    listed = []
    for name, node in _defined(tree):
        # Its def line runs at import, so only the lines after it say whether the body ran.
        first = max(node.body[0].lineno, node.lineno + 1)
        body = {line for line in statements if first <= line <= node.end_lineno}
        if not body:
            continue
        run = body & ran
        door = name in doors
        if not run and not door:
            continue
        unreachable = {
            line: why
            for line, why in _cpu_unreachable(node, flags).items()
            if line in body and line not in ran
        }
        if doors.get(name):  # its class or its store needs hardware this machine lacks
            unreachable.update({line: doors[name] for line in body - run - set(unreachable)})
        missed = sorted(body - run - set(unreachable))
        listed.append(FunctionLines(name, node.lineno, door, sorted(run), missed, unreachable))
    return listed


def _defined(tree: ast.Module, prefix: str = ""):
    """(qualified name, node) of every function and method, nested classes included; a function
    inside a function is part of its outer one."""
    for node in tree.body if isinstance(tree, ast.Module) else tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _defined(node, f"{prefix}{node.name}.")


def _cpu_unreachable(function: ast.AST, flags: dict[str, bool]) -> dict[int, str]:
    """The lines of `function` under a branch its test rules out here (a test of the module's
    boolean globals, with and, or, not, that they decide as this machine set them), and the lines
    after an `if` whose branch taken here always returns or raises."""
    lines: dict[int, str] = {}
    for block in _blocks(function):
        for index, node in enumerate(block):
            if not isinstance(node, ast.If) or (value := _decided(node.test, flags)) is None:
                continue
            test = ast.unparse(node.test)
            test = test if len(test) <= TEST_SHOWN else test[: TEST_SHOWN - 3] + "..."
            said = f"`if {test}` is {value} on this machine ({_said(node.test, flags)})"
            taken = node.body if value else node.orelse
            dead = [(node.orelse if value else node.body, said)]
            if taken and isinstance(taken[-1], (ast.Return, ast.Raise)):
                dead.append((block[index + 1 :], f"after {said}, a branch that returns"))
            for statements, why in dead:
                for statement in statements:
                    for line in range(statement.lineno, statement.end_lineno + 1):
                        lines.setdefault(line, why)
    return lines


def _blocks(function: ast.AST):
    """Every statement list of `function` (bodies, else branches, handlers, finally blocks)."""
    for node in ast.walk(function):
        for part in ("body", "orelse", "finalbody"):
            block = getattr(node, part, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _decided(test: ast.expr, flags: dict[str, bool]) -> Optional[bool]:
    """The test's value from the globals alone, or None where it needs anything else."""
    if isinstance(test, ast.Name):
        return flags.get(test.id)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decided(test.operand, flags)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_decided(value, flags) for value in test.values]
        short = isinstance(test.op, ast.Or)  # or: one True decides it; and: one False
        if short in values:
            return short
        return None if None in values else not short
    return None


def _said(test: ast.expr, flags: dict[str, bool]) -> str:
    names = sorted({n.id for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in flags})
    return ", ".join(f"{name} = {flags[name]}" for name in names)


def door_lines(files: list[FileLines]) -> dict[str, int]:
    """The pool write doors' lines: run, not reached by the run, and unable to run here (the `sut`
    record's door_lines_* columns, which the dashboard shows beside the release code)."""
    doors = [function for file in files for function in file.functions if function.door]
    return {
        "door_lines_run": sum(len(door.run) for door in doors),
        "door_lines_not_reached": sum(len(door.not_reached) for door in doors),
        "door_lines_cpu_unreachable": sum(len(door.cpu_unreachable) for door in doors),
    }


def write_release_lines(
    out: Path, run_id: str, folder: Path, roots: dict[str, str]
) -> tuple[Path, str, dict[str, dict[str, int]]]:
    """release-lines-RUN.json under `out` (written whole or not at all), the summary's section and
    each SUT's door line counts, from the workers' data in `folder`; `roots`: each measured SUT's
    spec and the folder holding its `sglang`."""
    from reports.atomic import write_text_atomic

    measured, flags = measured_data(folder), measured_flags(folder)
    by_sut = {spec: release_lines(measured, flags, root) for spec, root in roots.items()}
    path = out / f"release-lines-{run_id}.json"
    written = {spec: [asdict(file) for file in files] for spec, files in by_sut.items()}
    write_text_atomic(path, json.dumps({"run_id": run_id, "suts": written}))
    section = "\n\n".join(
        f"### {spec}\n\n{lines_markdown(files)}" for spec, files in by_sut.items()
    )
    return path, section, {spec: door_lines(files) for spec, files in by_sut.items()}


def lines_markdown(files: list[FileLines]) -> str:
    """The summary's section: per file, then per function, lines run of those that can run
    here, with the lines that did not run and why."""
    if not files:
        return "No write-path line of the release was measured (no release code ran)."
    out = [
        "Lines of the release's write path the run's checks executed (coverage.py in its "
        "worker, measuring only while a check runs). A function is listed where its body ran, "
        "and so is every pool write door.",
        "",
        "| file | statements run | functions listed |",
        "|---|---|---|",
    ]
    out += [f"| {f.file} | {f.run} of {f.statements} | {len(f.functions)} |" for f in files]
    out += [
        "",
        "The write doors and the backends' forwards (every function: release-lines-RUN.json):",
        "",
        "| function | lines run | not reached by the run | cannot run on this machine |",
        "|---|---|---|---|",
    ]
    for file in files:
        for function in file.functions:
            if not (function.door or FORWARD.fullmatch(function.name.rsplit(".", 1)[-1])):
                continue
            reachable = len(function.run) + len(function.not_reached)
            out.append(
                f"| {file.file.rsplit('/', 1)[-1]}:{function.first_line} {function.name} | "
                f"{len(function.run)} of {reachable} | {_spans(function.not_reached)} | "
                f"{_unreachable(function.cpu_unreachable)} |"
            )
    return "\n".join(out)


def _spans(lines: list[int]) -> str:
    if not lines:
        return "-"
    spans, start = [], lines[0]
    for previous, line in zip(lines, lines[1:] + [None]):
        if line != previous + 1:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
            start = line
    return ", ".join(spans)


def _unreachable(lines: dict[int, str]) -> str:
    by_reason: dict[str, list[int]] = {}
    for line, why in sorted(lines.items()):
        by_reason.setdefault(why, []).append(line)
    return "; ".join(f"{_spans(found)}: {why}" for why, found in by_reason.items()) or "-"
