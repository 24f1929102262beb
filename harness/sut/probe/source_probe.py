"""Facts about a write door decided from its source with `ast`: whether every path through it
launches a device kernel, and whether it (or a method it calls) unwraps a KVWriteLoc.

A door whose every path ends in a kernel launch cannot run on a machine without a GPU; one with
a torch fallback on some path can. Deciding from the source, not from a version or a function's
name (0.5.23 kept the name `set_mla_kv_buffer_triton` for a dispatcher with a torch path), keeps
the answer right for releases and forks nobody named. Calls are followed into `self` methods and
into functions the resolver can find (the loaded module's globals, or the unpacked package).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Finds the function a call reaches, with the resolver for calls inside it.
Resolver = Callable[[ast.Call], tuple[ast.FunctionDef, "Resolver"] | None]


def _callee_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_launch(call: ast.Call) -> bool:
    """`kernel[grid](...)` (Triton), or a JIT-compiled CUDA kernel (`jit_...`)."""
    return isinstance(call.func, ast.Subscript) or _callee_name(call).startswith("jit_")


def _calls_in(stmt: ast.stmt) -> list[ast.Call]:
    value = getattr(stmt, "value", None)
    return [value] if isinstance(value, ast.Call) else []


def _escapes(block: list[ast.stmt]) -> bool:
    """A path through `block` leaves the function (return) before the code after it."""
    return any(
        isinstance(stmt, ast.Return)
        or (isinstance(stmt, ast.If) and (_escapes(stmt.body) or _escapes(stmt.orelse)))
        for stmt in block
    )


def _statement_launches(stmt: ast.stmt, resolve: Resolver, seen: frozenset[str]) -> bool:
    if isinstance(stmt, ast.If):
        return _block_launches(stmt.body, resolve, seen) and _block_launches(
            stmt.orelse, resolve, seen
        )
    if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
        return _block_launches(stmt.body, resolve, seen)
    for call in _calls_in(stmt):
        if _is_launch(call):
            return True
        target = resolve(call)
        if target is not None and target[0].name not in seen:
            return always_launches_kernel(target[0], target[1], seen)
    return False


def _block_launches(block: list[ast.stmt], resolve: Resolver, seen: frozenset[str]) -> bool:
    for stmt in block:
        if _statement_launches(stmt, resolve, seen):
            return True
        if isinstance(stmt, ast.Return) or (
            isinstance(stmt, ast.If)
            and any(
                _escapes(branch) and not _block_launches(branch, resolve, seen)
                for branch in (stmt.body, stmt.orelse)
            )
        ):
            return False  # a path returns without a launch
    return False


def always_launches_kernel(
    function: ast.FunctionDef, resolve: Resolver, seen: frozenset[str] = frozenset()
) -> bool:
    """True when every path through `function` reaches a kernel launch."""
    return _block_launches(function.body, resolve, seen | {function.name})


def reaches_word(
    function: ast.FunctionDef, resolve: Resolver, word: str, seen: frozenset[str] = frozenset()
) -> bool:
    """`word` appears in `function` or in a function it calls that `resolve` finds (the mutants'
    base pools unwrap in a shared `_loc` helper, 0.5.23 inline)."""
    if word in ast.unparse(function):
        return True
    seen = seen | {function.name}
    for node in ast.walk(function):
        target = resolve(node) if isinstance(node, ast.Call) else None
        if (
            target is not None
            and target[0].name not in seen
            and reaches_word(target[0], target[1], word, seen)
        ):
            return True
    return False


# ---- resolvers ------------------------------------------------------------------------------


def _parse_function(obj: Any) -> ast.FunctionDef | None:
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    return node if isinstance(node, ast.FunctionDef) else None


def live_resolver(cls: type, function: Any) -> Resolver:
    """Calls inside `function` (a method of `cls`): `self.X` through the class, bare names through
    the function's globals."""
    namespace = getattr(inspect.unwrap(function), "__globals__", {})

    def resolve(call: ast.Call) -> tuple[ast.FunctionDef, Resolver] | None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            target = getattr(cls, func.attr, None)
        elif isinstance(func, ast.Name):
            target = namespace.get(func.id)
        else:
            return None
        if not inspect.isfunction(inspect.unwrap(target) if callable(target) else None):
            return None
        node = _parse_function(target)
        return None if node is None else (node, live_resolver(cls, target))

    return resolve


def live_method(cls: type, name: str) -> tuple[ast.FunctionDef, Resolver] | None:
    method = getattr(cls, name, None)
    node = _parse_function(method) if method is not None else None
    return None if node is None else (node, live_resolver(cls, method))


class SourceTree:
    """An unpacked package read with `ast`: module files by dotted name, parsed once."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._trees: dict[str, ast.Module | None] = {}

    def module(self, dotted: str) -> ast.Module | None:
        if dotted not in self._trees:
            base = self.root.joinpath(*dotted.split("."))
            path = next(
                (p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None
            )
            try:
                self._trees[dotted] = ast.parse(path.read_text()) if path else None
            except SyntaxError:
                self._trees[dotted] = None
        return self._trees[dotted]

    def function(
        self, dotted: str, name: str, depth: int = 0
    ) -> tuple[ast.FunctionDef, Resolver] | None:
        tree = self.module(dotted)
        if tree is None or depth > 3:
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node, self.resolver(dotted, None, node)
        source = _imported_from(tree.body, name)
        return None if source is None else self.function(source, name, depth + 1)

    def method(
        self, dotted: str, class_name: str, name: str
    ) -> tuple[ast.FunctionDef, Resolver] | None:
        tree = self.module(dotted)
        cls = next(
            (
                n
                for n in (tree.body if tree else ())
                if isinstance(n, ast.ClassDef) and n.name == class_name
            ),
            None,
        )
        node = next(
            (
                n
                for n in (cls.body if cls else ())
                if isinstance(n, ast.FunctionDef) and n.name == name
            ),
            None,
        )
        return None if node is None else (node, self.resolver(dotted, class_name, node))

    def resolver(self, dotted: str, class_name: str | None, function: ast.FunctionDef) -> Resolver:
        def resolve(call: ast.Call) -> tuple[ast.FunctionDef, Resolver] | None:
            func = call.func
            if (
                class_name
                and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                return self.method(dotted, class_name, func.attr)
            if not isinstance(func, ast.Name):
                return None
            local = _imported_from(list(ast.walk(function)), func.id)
            return self.function(local, func.id) if local else self.function(dotted, func.id)

        return resolve


def _imported_from(nodes: list[ast.AST], name: str) -> str | None:
    for node in nodes:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and any(
                (alias.asname or alias.name) == name and alias.name == name for alias in node.names
            )
        ):
            return node.module
    return None
