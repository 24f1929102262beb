"""One private name renamed at every use in a copy of a release's `sglang/` package: with rope
where rope can, from the tokens where it refuses, and the string literals that name it as an
attribute. The campaign that judges each renamed copy is harness/run/release_renames.py."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from mutants.release_renames import PrivateName


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
