"""The branch that chooses a write call: the chain of `if` / `elif` / `else` tests around it.

Two releases can make the same call under different conditions: a triton MLA path written as
`if self.use_mla or layer.k_scale is None: <write k>` writes K without the k_scale division that
`if layer.k_scale is None: ... elif self.use_mla: <write k / k_scale>` applies, with the very same
call expression. So the census records, for every write call, the tests of the `if` statements
that enclose it, outermost first, as `ast.unparse` text (an `else` or `elif` arm records the
negation of the test it skips). A backend's call-site model declares the chains its release
files use (backends.call_shapes.Branch); `branch_mismatches` names each call whose chain is not
declared and each declared chain no call has.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Protocol

from backends.call_shapes import Branch

Chain = tuple[str, ...]


_FLIPPED: dict[type, type] = {
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def _negated(test: ast.expr) -> str:
    """`not test`, written as a reader would: `not not x` is `x`, `not a is None` is
    `a is not None`, so one condition has one text whichever arm it guards."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        flipped = ast.Compare(test.left, [_FLIPPED[type(test.ops[0])]()], test.comparators)
        return ast.unparse(flipped)
    return ast.unparse(ast.UnaryOp(ast.Not(), test))


class Conditions:
    """The enclosing-`if` chain of any node of one function, from a parent map built once."""

    def __init__(self, function: ast.FunctionDef):
        self._parents: dict[int, ast.AST] = {}
        for parent in ast.walk(function):
            for child in ast.iter_child_nodes(parent):
                self._parents[id(child)] = parent
        self._root = function

    def of(self, node: ast.AST) -> Chain:
        tests: list[str] = []
        child, parent = node, self._parents.get(id(node))
        while parent is not None and child is not self._root:
            if isinstance(parent, ast.If) and child is not parent.test:
                in_body = any(child is stmt for stmt in parent.body)
                tests.append(ast.unparse(parent.test) if in_body else _negated(parent.test))
            child, parent = parent, self._parents.get(id(parent))
        return tuple(reversed(tests))


def branch_key(function: str, chain: Chain) -> Branch:
    """The declared form of a call's branch: its method (the class name may change) and chain."""
    return Branch(function.rsplit(".", 1)[-1], chain)


class _Call(Protocol):
    file: str
    line: int
    function: str
    branch: Chain


def branch_findings(
    calls: Iterable[_Call], declared: tuple[Branch, ...] | None, files: tuple[str, ...]
) -> list[tuple[str, int, str, str]]:
    """(file, line, what was found, what the model expects) for each call under a branch not
    declared and each declared branch no call has; None declared (the model says nothing of
    this era's branches) checks nothing."""
    if declared is None:
        return []
    keyed = [(call, branch_key(call.function, call.branch)) for call in calls]
    found = {key for _, key in keyed}

    def expected(function: str) -> str:
        same = [b.describe() for b in declared if b.function == function]
        return "; ".join(same) or f"no write call in {function}"

    return [
        (call.file, call.line, f"branch {key.describe()}", expected(key.function))
        for call, key in keyed
        if key not in declared
    ] + [
        (files[0] if files else "-", 0, "no call under", b.describe())
        for b in dict.fromkeys(declared)
        if b not in found
    ]
