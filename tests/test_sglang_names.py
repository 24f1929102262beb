"""Every name of SGLang the harness relies on beyond its public write API lives in
backends/sglang_names.py. An attribute named by a string (getattr, setattr, hasattr, delattr)
anywhere else in the tree must be one the tree defines itself, a name of Python, torch or the
standard library, or a name the module declares; and the batch's physical mark is named nowhere
else at all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import backends.sglang_names as names

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("pools", "scenarios", "backends", "harness", "mutants", "reports")
NAMES_MODULE = REPO / "backends" / "sglang_names.py"
DYNAMIC = ("getattr", "setattr", "hasattr", "delattr")
# Attributes of Python, torch and the standard library that the tree reads by string.
FOREIGN = {
    "__dataclass_fields__", "__dict__", "__file__", "__globals__", "__module__", "__notes__",
    "__version__", "_storage_Use_Count", "device_count", "id", "isatty", "recompile_limit",
    "setitimer",
}  # fmt: skip


def _sources() -> dict[Path, ast.Module]:
    files = [path for root in ROOTS for path in sorted((REPO / root).rglob("*.py"))]
    return {path: ast.parse(path.read_text()) for path in files if path != NAMES_MODULE}


def defined_names(trees: list[ast.Module]) -> set[str]:
    """Every name the trees bind: functions, classes, parameters, keywords, assigned names and
    attributes. A string naming one of these names the tree's own objects."""
    found: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found.add(node.attr)
            elif isinstance(node, ast.keyword) and node.arg:
                found.add(node.arg)
    return found


def named_by_string(tree: ast.Module) -> list[tuple[str, int]]:
    """(attribute, line) of each getattr/setattr/hasattr/delattr given a literal name."""
    return [
        (node.args[1].value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in DYNAMIC
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ]


def undeclared(trees: dict[Path, ast.Module]) -> list[str]:
    own = defined_names(list(trees.values()))
    return [
        f"{path.relative_to(REPO)}:{line} names {attribute!r}"
        for path, tree in trees.items()
        for attribute, line in named_by_string(tree)
        if attribute not in own and attribute not in FOREIGN and not names.declares(attribute)
    ]


def test_every_attribute_named_by_a_string_is_the_tree_s_or_declared():
    assert undeclared(_sources()) == []


def test_a_planted_read_of_a_private_field_fails_it():
    trees = _sources()
    planted = ast.parse("def read(batch):\n    return getattr(batch, 'some_private_field')\n")
    trees[REPO / "harness" / "planted.py"] = planted
    assert undeclared(trees) == ["harness/planted.py:2 names 'some_private_field'"]


def test_the_batch_s_physical_mark_is_named_only_in_the_names_module():
    mark = names.BATCH_PHYSICAL_MARK
    assert names.named(f"ForwardBatch.{mark}").role == "fallback"
    # mutants/ is left out: its release-source records edit the release's own text.
    naming = [
        str(path.relative_to(REPO))
        for path in _sources()
        if path.parts[len(REPO.parts)] != "mutants" and mark in path.read_text()
    ]
    assert naming == []


# ---- the modules that touch the release's own objects ------------------------------------------
# Every name they spell that is also a private name of the installed release's write path (the
# names the rename campaign renames, mutants/release_renames.py) must be a declared one: an
# attribute read, a keyword given, or a string.


def facing_names(tree: ast.Module) -> list[tuple[str, int]]:
    """(name, line) of each attribute read, keyword argument and identifier-like string."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.append((node.attr, node.lineno))
        elif isinstance(node, ast.keyword) and node.arg:
            found.append((node.arg, node.value.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.isidentifier():
                found.append((node.value, node.lineno))
    return found


def undeclared_facing(trees: dict[Path, ast.Module], private: set[str]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line} names the release's private {name!r}"
        for path, tree in trees.items()
        for name, line in facing_names(tree)
        if name in private and not names.declares(name) and name not in names.NOT_RELEASE_NAMES
    ]


def _release_private_names() -> set[str]:
    from mutants.release_renames import private_names
    from tests.conftest import SGLANG_INSTALL_HINT, installed_sglang_root

    root = installed_sglang_root()
    if root is None:
        pytest.skip(SGLANG_INSTALL_HINT)
    return {private.name for private in private_names(root / "sglang")}


def _facing_trees() -> dict[Path, ast.Module]:
    return {REPO / path: ast.parse((REPO / path).read_text()) for path in names.RELEASE_FACING}


@pytest.mark.sglang
def test_release_facing_code_names_only_the_release_names_it_declares():
    assert undeclared_facing(_facing_trees(), _release_private_names()) == []


@pytest.mark.sglang
def test_a_planted_read_of_a_release_private_attribute_fails_it():
    trees = _facing_trees()
    planted = ast.parse("def read(batch):\n    return batch.seq_lens_sum\n")
    trees[REPO / "backends" / "real_code.py"] = planted
    assert undeclared_facing(trees, _release_private_names()) == [
        "backends/real_code.py:2 names the release's private 'seq_lens_sum'"
    ]


def test_every_release_facing_module_is_there_and_every_excused_name_says_why():
    assert [path for path in names.RELEASE_FACING if not (REPO / path).is_file()] == []
    assert all(why for why in names.NOT_RELEASE_NAMES.values())
