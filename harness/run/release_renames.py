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

import ast
import io
import re
import shutil
import time
import tokenize
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from harness.run.edited_functions import touched_functions
from harness.run.forked_judges import Judges, learn_modules, run_once
from harness.run.release_source import (
    Slice,
    SliceResult,
    plan_difference,
    read_slice,
    release_folder,
    run_slice,
    slice_argv,
    sparse_copy,
)
from mutants.release_renames import PrivateName
from pools.kinds.layout import UNIFIED_MHA
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA

# The cells every renamed copy is judged on, whatever its trail: a token-major, a SWA, a latent
# and a unified pool (the one that reads the plan's physical mark), through the plain models.
SENTINEL = Slice(names(MHA, SWA_MHA, MLA, UNIFIED_MHA), ("bf16",), ("plain", "plain_mla"))
SUFFIX = "_kvh_renamed"


@dataclass
class RenameResult:
    name: str
    new_name: str
    kinds: tuple[str, ...]
    verdict: str  # PASS, FINDING, ERROR, or NOT_RENAMED (no file changed)
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


def _word(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")


def package_texts(package: Path) -> dict[Path, str]:
    """Every .py file of `package` by its path relative to it, read once for a campaign."""
    return {
        path.relative_to(package): path.read_text(errors="replace")
        for path in sorted(package.rglob("*.py"))
    }


def files_naming(package: Path, name: str, texts: Optional[dict[Path, str]] = None) -> list[Path]:
    """The .py files of `package` whose text holds `name` as a whole word, relative to it;
    `texts`: the package's package_texts, where a campaign read them already."""
    word = _word(name)
    texts = package_texts(package) if texts is None else texts
    return [path for path, text in texts.items() if name in text and word.search(text)]


def _own_copy(path: Path) -> None:
    """Replace a hard link with a file of its own, so an edit never reaches the release."""
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)


def _definition_offsets(text: str, name: str) -> list[int]:
    """Where `name` is defined in a module's text (as mutants/release_renames.py finds its
    definitions): each `def name`, the first `self.name =` of each class, a class field and a
    module-level assignment, as character offsets of the name itself."""
    tree = ast.parse(text)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        # ast columns count UTF-8 bytes; rope's offsets count characters.
        encoded = text[starts[line - 1] : starts[line]].encode()
        return starts[line - 1] + len(encoded[:col].decode(errors="replace"))

    found: list[int] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [
                offset(t.lineno, t.col_offset)
                for t in targets
                if isinstance(t, ast.Name) and t.id == name
            ]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            head = text[offset(node.lineno, node.col_offset) :]
            found.append(offset(node.lineno, node.col_offset) + head.index(name))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                target = getattr(item, "target", None)
                if isinstance(item, ast.AnnAssign) and isinstance(target, ast.Name):
                    if target.id == name:
                        found.append(offset(target.lineno, target.col_offset))
            attributes = [
                sub
                for sub in ast.walk(node)
                if isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == "self"
                and sub.attr == name
            ]
            if attributes:
                first = min(attributes, key=lambda a: (a.lineno, a.col_offset))
                found.append(offset(first.end_lineno, first.end_col_offset) - len(name))
    return sorted(set(found))


def is_parameter(texts: list[str], name: str) -> bool:
    """Whether a function of these module texts takes a parameter spelled `name`."""
    return any(
        isinstance(node, ast.arg) and node.arg == name
        for text in texts
        for node in ast.walk(ast.parse(text))
    )


def _attribute_strings(text: str, name: str) -> set[tuple[int, int]]:
    """(line, character column) of each `name` string given to getattr, setattr, hasattr or
    delattr: a use of the attribute by name, whatever else the spelling names."""
    lines = text.splitlines()
    return {
        (key.lineno, len(lines[key.lineno - 1].encode()[: key.col_offset].decode()))
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        for key in node.args[1:2]
        if isinstance(key, ast.Constant) and key.value == name
    }


def _rename_strings(text: str, name: str, new_name: str, parameter: bool = False) -> str:
    """String literals whose value is exactly `name`: a getattr's argument, a list of fields read
    by name. Where `name` is also a parameter, only a getattr-family argument: another string
    may name the parameter (`{"allocation_label": "SWA"}` given as a constructor's keywords,
    `mutates_args=["hidden_states"]` of a custom op), which a rename of the attribute keeps, as
    rope keeps the parameter."""
    if not re.search(rf"""(['"]){re.escape(name)}\1""", text):
        return text  # most files hold no such literal: no need to tokenize them
    only = _attribute_strings(text, name) if parameter else None
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    edits = []
    for token in tokens:
        if (
            token.type == tokenize.STRING
            and token.string[1:-1] == name
            and token.string[0] in "'\""
            and (only is None or token.start in only)
        ):
            edits.append(token)
    for token in reversed(edits):  # from the end, so earlier positions hold
        row, col = token.start
        line = lines[row - 1]
        quote = token.string[0]
        lines[row - 1] = line[:col] + f"{quote}{new_name}{quote}" + line[col + len(token.string) :]
    return "".join(lines)


def field_classes(text: str, name: str) -> set[str]:
    """The classes of a module's text that declare `name` as a class field (a dataclass's)."""
    return {
        node.name
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.AnnAssign)
        and isinstance(item.target, ast.Name)
        and item.target.id == name
    }


# Callees whose keywords are a dataclass's fields besides the class itself: `cls(...)` in its
# classmethods and `dataclasses.replace(batch, ...)`.
FIELD_KEYWORD_CALLEES = frozenset({"cls", "replace"})


def rename_tokens(
    text: str, name: str, new_name: str, definitions: list[int], kinds: tuple[str, ...],
    classes: frozenset[str] = frozenset(),
) -> str:  # fmt: skip
    """The rename rope could not make, made from the tokens: each definition of `name` (character
    offsets), each attribute access `.name`, where it is a module's function or constant every
    bare use (its module's and an importer's), and where it is a field of `classes` the keyword
    of a call to one of them (`ForwardBatch(name=...)`). A parameter, a local or another
    function's keyword of the same spelling is left alone, as rope's unsure rule does."""
    bare = bool({"function", "constant"} & set(kinds))
    callees = classes | FIELD_KEYWORD_CALLEES if classes else frozenset()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    skipped = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    tokens = [
        t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skipped
    ]
    defined = set(definitions)
    offsets = []
    calls: list[str] = []  # the callee of each open bracket ("" for a bracket that is no call)
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else None
        if token.type == tokenize.OP and token.string in ("(", "[", "{"):
            called = before is not None and before.type == tokenize.NAME and token.string == "("
            calls.append(before.string if called else "")
        elif token.type == tokenize.OP and token.string in (")", "]", "}") and calls:
            calls.pop()
        if token.type != tokenize.NAME or token.string != name:
            continue
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        keyword = after == "=" and bool(calls) and calls[-1] in callees
        attribute = before is not None and before.string == "."
        offset = starts[token.start[0] - 1] + token.start[1]
        if offset in defined or attribute or bare or keyword:
            offsets.append(offset)
    for offset in reversed(offsets):
        text = text[:offset] + new_name + text[offset + len(name) :]
    return text


def _attribute_uses() -> Callable[[Any], bool]:
    """rope's `unsure` callback: an occurrence rope cannot prove or rule out is renamed when it
    is an attribute access (`pool.name` on an untyped pool), never a bare name. A bare name rope
    could not resolve is a parameter or a local of the same spelling (`total_bytes` in
    `UnifiedKVPool.__init__(self, *, total_bytes)`): a signature that callers outside the release
    name, which renaming a private attribute must not change. Module texts are read once."""
    texts: dict[str, str] = {}

    def unsure(occurrence: Any) -> bool:
        path = occurrence.resource.path
        text = texts.setdefault(path, occurrence.resource.read())
        start = occurrence.get_word_range()[0]
        return text[:start].rstrip().endswith(".")

    return unsure


@dataclass
class Renamed:
    changed: dict[str, tuple[str, str]]  # each changed file's (text before, text after)
    by: str  # "rope", or "tokens (rope: its refusal)" where rope could not (rename_tokens)


def rename_in_copy(
    root: Path, private: PrivateName, new_name: str, naming: Optional[list[Path]] = None
) -> Renamed:
    """Rename `private` at every use in the package `root/sglang` (root holds the copy), with
    rope; where rope refuses or fails, from the tokens (rename_tokens). `naming`: the files of
    the package that name it (files_naming), where the caller knows them. Files by path
    relative to root."""
    from rope.base.project import Project
    from rope.refactor.rename import Rename

    package = root / "sglang"
    naming = files_naming(package, private.name) if naming is None else naming
    relative = [Path("sglang") / f for f in naming]
    before = {str(f): (root / f).read_text() for f in relative}
    for f in relative:
        _own_copy(root / f)
    with warnings.catch_warnings():  # rope's own DeprecationWarning about its internals
        warnings.simplefilter("ignore", DeprecationWarning)
        # No analysis of each module as rope saves it (automatic_soa, 1.5 s a rename on 0.5.23)
        # and no history: the project lives for one rename.
        project = Project(str(root), ropefolder=None, automatic_soa=False, save_history=False)
    unsure = _attribute_uses()
    refused = ""
    try:
        resources = [project.get_resource(str(f)) for f in relative]
        for defining in private.files:
            resource = project.get_resource(f"sglang/{defining}")
            for offset in _definition_offsets(resource.read(), private.name):
                if not resource.read()[offset:].startswith(private.name):
                    continue  # an earlier definition's rename reached this one
                try:
                    changes = Rename(project, resource, offset).get_changes(
                        new_name,
                        resources=resources,
                        in_hierarchy=True,
                        unsure=unsure,
                        docs=False,
                    )
                    beyond = [
                        r.path
                        for r in changes.get_changed_resources()
                        if r.path not in {str(f) for f in relative}
                    ]
                    if beyond:  # a file that does not name it: maybe the release's own, linked
                        raise ValueError(f"rope would change {beyond[0]}, which does not name it")
                    project.do(changes)
                except Exception as error:  # noqa: BLE001 - rope's refusal or its own failure
                    refused = f"{type(error).__name__}: {error}"
                    break
            if refused:
                break
    finally:
        project.close()
    if refused:  # start again from the release's texts, renamed from their tokens
        defining = {str(Path("sglang") / f) for f in private.files}
        classes = frozenset(
            c for f in defining if f in before for c in field_classes(before[f], private.name)
        )
        for f in relative:
            text = before[str(f)]
            offsets = _definition_offsets(text, private.name) if str(f) in defining else []
            renamed = rename_tokens(text, private.name, new_name, offsets, private.kinds, classes)
            (root / f).write_text(renamed)
    changed = {}
    parameter = is_parameter(list(before.values()), private.name)
    for f in relative:
        text = _rename_strings((root / f).read_text(), private.name, new_name, parameter)
        (root / f).write_text(text)
        if text != before[str(f)]:
            changed[str(f)] = (before[str(f)], text)
    return Renamed(changed, f"tokens (rope: {refused[:200]})" if refused else "rope")


def judged_slice(
    touched: set[str], trails: dict[tuple[str, str, str], set[str]], sentinel: Slice
) -> Slice:
    """The sentinel slice, widened by every cell whose trail reaches a touched function (as a
    cross product: a child run takes lists of pools, dtypes and backends)."""
    reached = [cell for cell, ran in trails.items() if ran & touched]
    pools = dict.fromkeys(sentinel.pools + tuple(c[0] for c in reached))
    dtypes = dict.fromkeys(sentinel.dtypes + tuple(c[1] for c in reached))
    backends = dict.fromkeys(sentinel.backends + tuple(c[2] for c in reached))
    return Slice(tuple(pools), tuple(dtypes), tuple(backends))


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
            f"warm judges: {judges.warmed} modules imported once, the unmodified release judged "
            f"warm as cold ({judged.checks} checks row for row, {seconds:.0f} s)"
        )
    return judges


@dataclass
class _Pending:
    private: PrivateName
    new_name: str
    renamed: Renamed
    copy: Path
    cells: Slice
    rename_seconds: float
    started: float


def _verdict(pending: _Pending, judged: SliceResult, reference: SliceResult) -> RenameResult:
    expected = {key: value for key, value in reference.plan.items() if pending.cells.holds(key)}
    differences = plan_difference(expected, judged.plan) if judged.verdict != "ERROR" else []
    kept = set(judged.real_code) == set(reference.real_code)
    ok = judged.verdict == "PASS" and kept and not differences
    detail = judged.detail or "; ".join(
        ([] if kept else [f"real code {sorted(judged.real_code)} vs {sorted(reference.real_code)}"])
        + ([f"{len(differences)} checks differ, first: {differences[0]}"] if differences else [])
        + ([judged.finding_lines[0][:300]] if judged.finding_lines else [])
    )
    private, changed = pending.private, pending.renamed.changed
    return RenameResult(
        private.name, pending.new_name, private.kinds, judged.verdict, ok, len(changed),
        tuple(sorted(touched_functions(changed))), asdict(pending.cells), judged.checks,
        len(differences), len(judged.real_code), len(reference.real_code),
        pending.rename_seconds, judged.seconds, pending.renamed.by, detail,
    )  # fmt: skip


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
    """Judge every name's rename. One thread does it all: it renames one name at a time with
    rope and starts a judge of each copy (a fork, harness/run/forked_judges.py) while up to
    `jobs` judges run; `cold` (or no kvh `entry` to call) execs a cold `kvh run` in each judge
    instead."""
    shutil.rmtree(work, ignore_errors=True)  # a run reads every record under its folders
    work.mkdir(parents=True)
    say(f"judging the unmodified {release} over the universe with --trail")
    reference = universe_baseline(release, universe, work)
    if reference.verdict == "ERROR":
        raise RuntimeError(f"the unmodified {release} gave no verdict: {reference.detail}")
    judges = prepared_judges(release, universe, reference, work, cold or entry is None, say, entry)
    source = release_folder(release)
    texts = package_texts(source / "sglang")
    pending: dict[int, _Pending] = {}
    results: list[RenameResult] = []

    def finish_one() -> None:
        pid, rc, output = judges.wait_any()
        done = pending.pop(pid)
        out = done.copy.parent / "out"
        judged = read_slice(rc, output, out, time.monotonic() - done.started)
        results.append(_verdict(done, judged, reference))
        shutil.rmtree(done.copy.parent, ignore_errors=True)
        progress(results[-1], len(results), len(names))

    try:
        for private in names:
            new_name = f"{private.name}{SUFFIX}"
            start = time.monotonic()
            scratch = work / f"rename-{private.record}"
            shutil.rmtree(scratch, ignore_errors=True)
            naming = files_naming(source / "sglang", private.name, texts)
            edited = [Path("sglang") / f for f in naming]
            copy = sparse_copy(
                source, scratch / "release", edited, with_siblings=release != "sglang"
            )
            renamed = rename_in_copy(copy, private, new_name, naming)
            changed = renamed.changed
            seconds = time.monotonic() - start
            if not changed:
                shutil.rmtree(scratch, ignore_errors=True)
                results.append(
                    RenameResult(private.name, new_name, private.kinds, "NOT_RENAMED", False, 0,
                                 (), renamed_by=renamed.by, detail=f"{renamed.by} changed no file")
                )  # fmt: skip
                progress(results[-1], len(results), len(names))
                continue
            cells = judged_slice(touched_functions(changed), reference.trails, sentinel)
            while len(pending) >= jobs:
                finish_one()
            argv = slice_argv(f"sglang@{copy}", cells, scratch / "out")
            pid = judges.start(argv, scratch / "judge.log")
            pending[pid] = _Pending(
                private, new_name, renamed, copy, cells, seconds, time.monotonic()
            )
        while pending:
            finish_one()
    finally:
        judges.stop_all()  # a signal, or an error: no judge outlives the campaign
    return reference, results


def sample(names: list[PrivateName], count: Optional[int], seed: int) -> list[PrivateName]:
    """`count` names drawn with `seed` (all of them, in order, where count is None)."""
    import random

    if count is None or count >= len(names):
        return names
    return sorted(random.Random(seed).sample(names, count), key=lambda p: p.name)
