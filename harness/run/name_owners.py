"""Who else holds a private name of a release's write path, for a rename of it
(harness/run/rope_rename.py): a tensor or another outside object with an attribute of that
spelling, a class outside the write path that sets it on itself, or members of other classes
that make one protocol with it; and where the write path defines it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harness.run.token_rename import parse_source
from mutants.release_renames import PrivateName


def definition_offsets(text: str, name: str) -> list[int]:
    """Where `name` is defined in a module's text (as mutants/release_renames.py finds its
    definitions): each `def name`, the first `self.name =` of each class, a class field and a
    module-level assignment, as character offsets of the name itself."""
    tree = parse_source(text)
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


# Who else has an attribute of the name: a tensor (everywhere in the write path), another
# outsider (a file's `write`, a list's `clear`, a thread's `start`: rare in the write path), or a
# class of the release outside the write path that sets it on itself (OWNED: fa3's own
# `self.use_mla`, beside HybridLinearKVPool's; a refactor of the pool's leaves the backend's).
TENSOR, OUTSIDER, OWNED = "tensor", "outsider", "owned"


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


def tensor_data_only(name: str) -> bool:
    """Whether a tensor's attribute `name` is data, not a method (`layout`, `shape`)."""
    import torch

    return hasattr(torch.Tensor, name) and not callable(getattr(torch.empty(0), name))


def other_owners(
    private: PrivateName, relative: list[Path], before: dict[str, str], outsider: str
) -> list[Path]:
    """The files outside the write path that define the name as a member too: a name other
    classes define is one protocol (`p.row_bytes()` in layout/token_major.py calls a DensePart's
    or a sub-pool spec's), which a developer renames as one. Their definitions and attribute
    uses are renamed from the tokens (rope per definition would take minutes for `alloc`).
    None where objects outside the release have the attribute too (`outsider`: a tensor's
    `shape`): the others' are as likely the outsider's. A module's own function or constant of
    the same spelling is its own: only members make a protocol. So is an attribute a class sets
    on `self` only (owned_elsewhere): its own state, not a member others call."""
    if outsider:
        return []
    write_path = [Path("sglang") / f for f in private.files]
    member = re.compile(
        rf"^\s+def {re.escape(private.name)}\b|(?<!\bself)\.{re.escape(private.name)}\s*=|"
        rf"^\s+{re.escape(private.name)}\s*[:=]",
        re.MULTILINE,
    )
    return [
        f
        for f in relative
        if f not in write_path
        and member.search(before[str(f)])
        and definition_offsets(before[str(f)], private.name)
        and not _factories_only(before[str(f)], private.name)
    ]


def owned_elsewhere(private: PrivateName, relative: list[Path], before: dict[str, str]) -> bool:
    """Whether a file outside the write path sets the name on `self`: a class of its own holds an
    attribute of the same spelling, so an untyped `x.name` outside the write path is as likely
    that class's (musa's `backend.use_mla` reads fa3's)."""
    write_path = {Path("sglang") / f for f in private.files}
    assigned = re.compile(rf"\bself\.{re.escape(private.name)}\s*(?::[^=\n]*)?=(?!=)")
    return any(f not in write_path and assigned.search(before[str(f)]) for f in relative)


def _factories_only(text: str, name: str) -> bool:
    """Whether every method `name` of a module is a static or class method: a factory called on
    its class (`TorchMemorySaverAdapter.create(...)` beside the write path's own `create`), which
    rope tells apart at every call, so it is another method, not one protocol."""
    methods = [
        item
        for node in ast.walk(parse_source(text))
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name
    ]
    factory = {"staticmethod", "classmethod"}
    return bool(methods) and all(
        any(isinstance(d, ast.Name) and d.id in factory for d in m.decorator_list) for m in methods
    )
