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
    delattr, or listed in a class's `__slots__`: a use of the attribute by name, whatever else
    the spelling names (KvBufferDesc's `row_bytes` is a slot and its constructor's keyword)."""
    lines = text.splitlines()
    keys = []
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        ):
            keys += node.args[1:2]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            listed = isinstance(node.value, (ast.Tuple, ast.List, ast.Set))
            keys += node.value.elts if listed else [node.value]
    return {
        (key.lineno, len(lines[key.lineno - 1].encode()[: key.col_offset].decode()))
        for key in keys
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
    classes: frozenset[str] = frozenset(), attributes: bool = True, keywords_only: bool = False,
    self_only: bool = False,
) -> str:  # fmt: skip
    """The rename rope could not make, made from the tokens: each definition of `name` (character
    offsets), each attribute access `.name` (in an f-string's fields too; with `attributes`),
    where it is a module's function or constant every bare use (its module's and an importer's),
    and where it is a field of `classes` the keyword of a call to one of them
    (`ForwardBatch(name=...)`; only those with `keywords_only`, after rope, which leaves a
    dataclass's keywords). A parameter, a local, another function's keyword of the same
    spelling and a module of an import's dotted path are left alone. `self_only`: of the
    attribute accesses, only `self.name` (where `attributes` is off)."""
    bare = bool({"function", "constant"} & set(kinds)) and not keywords_only
    attributes = attributes and not keywords_only
    self_only = self_only and not keywords_only
    callees = classes | FIELD_KEYWORD_CALLEES if classes else frozenset()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    imports = {
        line
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    skipped = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    tokens = [
        t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skipped
    ]
    defined = set() if keywords_only else set(definitions)
    offsets = []
    calls: list[str] = []  # the callee of each open bracket ("" for a bracket that is no call)
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else None
        if token.type == tokenize.OP and token.string in ("(", "[", "{"):
            called = before is not None and before.type == tokenize.NAME and token.string == "("
            calls.append(before.string if called else "")
        elif token.type == tokenize.OP and token.string in (")", "]", "}") and calls:
            calls.pop()
        at = starts[token.start[0] - 1] + token.start[1]
        if token.type == tokenize.STRING and attributes:
            offsets += [at + index for index in _fstring_attributes(token.string, name)]
        if token.type != tokenize.NAME or token.string != name:
            continue
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        keyword = after == "=" and bool(calls) and calls[-1] in callees
        dotted = before is not None and before.string == "."
        module_path = dotted and token.start[0] in imports  # `from sglang.srt.x.name import`
        on_self = dotted and index > 1 and tokens[index - 2].string == "self"
        attribute = dotted and not module_path and (attributes or (self_only and on_self))
        if at in defined or attribute or bare or keyword:
            offsets.append(at)
    for offset in sorted(set(offsets), reverse=True):
        text = text[:offset] + new_name + text[offset + len(name) :]
    return text


def _fstring_attributes(literal: str, name: str) -> list[int]:
    """Offsets in an f-string literal of each `.name` inside a replacement field (Python 3.11
    tokenizes an f-string as one string: `{self.name:.2f}` is a use)."""
    quote = min((i for i in (literal.find("'"), literal.find('"')) if i >= 0), default=0)
    if "f" not in literal[:quote].lower():
        return []
    found = []
    for field_match in re.finditer(r"(?<!\{)\{([^{}]*)\}", literal):
        for use in re.finditer(rf"(?<=\.){re.escape(name)}(?!\w)", field_match.group(1)):
            found.append(field_match.start(1) + use.start())
    return found


# Who else has an attribute of the name: a tensor (everywhere in the write path), or another
# outsider (a file's `write`, a list's `clear`, a thread's `start`: rare in the write path).
TENSOR, OUTSIDER = "tensor", "outsider"


def outsider_attribute(name: str) -> str:
    """TENSOR where a tensor has an attribute `name` (`shape`), OUTSIDER where another object
    that is not the release's has it (`write`), "" where none does: then `x.name` on an object
    rope cannot type may be theirs."""
    import io
    import logging
    import threading

    import numpy
    import torch

    if any(hasattr(owner, name) for owner in (torch.Tensor, numpy.ndarray)):
        return TENSOR
    owners = (str, bytes, list, dict, set, tuple, io.TextIOBase, io.BufferedIOBase,
              logging.Logger, threading.Thread, threading.Event)  # fmt: skip
    return OUTSIDER if any(hasattr(owner, name) for owner in owners) else ""


def _attribute_uses(defining: set[str], outsider: str) -> Callable[[Any], bool]:
    """rope's `unsure` callback: an occurrence rope cannot prove or rule out is renamed when it
    is an attribute access (`pool.name` on an untyped pool), never a bare name. A bare name rope
    could not resolve is a parameter or a local of the same spelling (`total_bytes` in
    `UnifiedKVPool.__init__(self, *, total_bytes)`): a signature that callers outside the release
    name, which renaming a private attribute must not change. Where an `outsider` has the
    attribute too, only in the files that define it (`defining`: `fout.write` in a benchmark is
    a file's, `space.write` in kv_loc_plan.py the release's), and where a tensor has it only
    `self.name` there (`loc.shape` beside KvBufferDesc's `self.shape` is a tensor's). Module
    texts are read once."""
    texts: dict[str, str] = {}

    def unsure(occurrence: Any) -> bool:
        path = occurrence.resource.path
        if outsider and path not in defining:
            return False
        text = texts.setdefault(path, occurrence.resource.read())
        before = text[: occurrence.get_word_range()[0]].rstrip()
        return before.endswith(".") and (outsider != TENSOR or _on_self(before))

    return unsure


def _on_self(before: str) -> bool:
    """Whether the text before an attribute's name ends with `self.`."""
    return re.search(r"(?<![\w.])self\s*\.$", before) is not None


def _other_owners(
    private: PrivateName, relative: list[Path], before: dict[str, str], outsider: str
) -> list[Path]:
    """The files outside the write path that define the name as a member too: a name other
    classes define is one protocol (`p.row_bytes()` in layout/token_major.py calls a DensePart's
    or a sub-pool spec's), which a developer renames as one. Their definitions and attribute
    uses are renamed from the tokens (rope per definition would take minutes for `alloc`).
    None where objects outside the release have the attribute too (`outsider`: a tensor's
    `shape`): the others' are as likely the outsider's. A module's own function or constant of
    the same spelling is its own: only members make a protocol."""
    if outsider:
        return []
    write_path = [Path("sglang") / f for f in private.files]
    member = re.compile(
        rf"^\s+def {re.escape(private.name)}\b|\.{re.escape(private.name)}\s*=|"
        rf"^\s+{re.escape(private.name)}\s*[:=]",
        re.MULTILINE,
    )
    return [
        f
        for f in relative
        if f not in write_path
        and member.search(before[str(f)])
        and _definition_offsets(before[str(f)], private.name)
    ]


def _rope_rename(
    root: Path, name: str, new_name: str, relative: list[Path], modules: list[str],
    unsure: Callable[[Any], bool],
) -> str:  # fmt: skip
    """Rename each definition of `name` in `modules` (in its class hierarchy) across the files
    `relative`, with rope; rope's refusal or failure, or "" when it renamed them all."""
    from rope.base.project import Project
    from rope.refactor.rename import Rename

    with warnings.catch_warnings():  # rope's own DeprecationWarning about its internals
        warnings.simplefilter("ignore", DeprecationWarning)
        # No analysis of each module as rope saves it (automatic_soa, 1.5 s a rename on 0.5.23)
        # and no history: the project lives for one rename.
        project = Project(str(root), ropefolder=None, automatic_soa=False, save_history=False)
    allowed = {str(f) for f in relative}
    try:
        resources = [project.get_resource(str(f)) for f in relative]
        for module in modules:
            resource = project.get_resource(module)
            left = -1
            while True:
                # Found again after each rename: an earlier one moved the text, or reached it.
                offsets = _definition_offsets(resource.read(), name)
                if not offsets:
                    break
                if len(offsets) == left:
                    return f"RefactoringError: rope left a definition at {offsets[0]}"
                left = len(offsets)
                try:
                    changes = Rename(project, resource, offsets[0]).get_changes(
                        new_name, resources=resources, in_hierarchy=True, unsure=unsure,
                        docs=False,
                    )  # fmt: skip
                    beyond = [r.path for r in changes.get_changed_resources()]
                    beyond = [path for path in beyond if path not in allowed]
                    if beyond:  # a file that does not name it: maybe the release's own, linked
                        raise ValueError(f"rope would change {beyond[0]}, which does not name it")
                    project.do(changes)
                except Exception as error:  # noqa: BLE001 - rope's refusal or its own failure
                    return f"{type(error).__name__}: {error}"
        return ""
    finally:
        project.close()


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
    package = root / "sglang"
    naming = files_naming(package, private.name) if naming is None else naming
    relative = [Path("sglang") / f for f in naming]
    before = {str(f): (root / f).read_text() for f in relative}
    for f in relative:
        _own_copy(root / f)
    outsider = outsider_attribute(private.name)
    write_path = {str(Path("sglang") / f) for f in private.files}
    others = {str(f) for f in _other_owners(private, relative, before, outsider)}
    refused = _rope_rename(
        root, private.name, new_name, relative, sorted(write_path),
        _attribute_uses(write_path, outsider),
    )  # fmt: skip
    defining = write_path | others
    classes = frozenset(
        c for f in defining if f in before for c in field_classes(before[f], private.name)
    )
    for f in relative if refused or classes or others else []:
        # From the release's texts where rope refused. After rope, the other owners' members
        # (rope renamed the write path's hierarchy), and the keywords of a call to a class whose
        # field it is (rope renames a dataclass's field, not its keywords).
        text = before[str(f)] if refused else (root / f).read_text()
        offsets = _definition_offsets(text, private.name) if str(f) in defining else []
        whole = bool(refused) or str(f) in others
        renamed = rename_tokens(
            text, private.name, new_name, offsets, private.kinds, classes,
            attributes=not outsider or (outsider == OUTSIDER and str(f) in write_path),
            keywords_only=not whole, self_only=str(f) in write_path,
        )  # fmt: skip
        (root / f).write_text(renamed)
    changed = {}
    # Where outsiders have the attribute too, only the defining files' getattr-family and slot
    # strings: `getattr(w13_scale, "shape", None)` in a kernel is a tensor's.
    parameter = bool(outsider) or is_parameter(list(before.values()), private.name)
    for f in relative:
        text = (root / f).read_text()
        if not outsider or str(f) in defining:
            text = _rename_strings(text, private.name, new_name, parameter)
            (root / f).write_text(text)
        if text != before[str(f)]:
            changed[str(f)] = (before[str(f)], text)
    return Renamed(changed, f"tokens (rope: {refused[:200]})" if refused else "rope")
