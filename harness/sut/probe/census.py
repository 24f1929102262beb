"""An AST census of a release's KV write call sites, compared with the harness's call-site model.

For each backend source file of an unpacked `sglang` package, every `set_kv_buffer` /
`set_mla_kv_buffer` call is read with `ast` and reduced to its shape: the door, how the loc is
built (a bare tensor, `KVWriteLoc(...)`, `KVWriteLoc.for_layer/for_batch(...)`), which loc it
targets, the SWA loc and whether it goes as the `swa_loc=` keyword, and the scales. Names are
followed to their assignments in the enclosing function, and calls to a file's own write helpers
(`self._set_kv_buffer(...)`) are expanded with their arguments. A conditional gives one variant
per branch. Each call also carries the chain of `if` tests that chooses it
(harness.sut.probe.census_branches). A helper is known by what it does (another function of the
file calls it with the loc it writes), never by its name. harness/sut/probe/census_compare.py
then checks shapes and branches against `harness.sut.probe.census_call_sites`.
"""

from __future__ import annotations

import ast
import functools
import itertools
from dataclasses import dataclass
from pathlib import Path

# The doors the census reads are the ones a release's own backend code is stopped at.
from backends.real_code import WRITE_DOORS
from harness.sut.probe.census_branches import Chain, Conditions
from harness.sut.probe.census_call_sites import BACKEND_MODELS, BackendModel, Shape

ATTENTION_DIR = "sglang/srt/layers/attention"


@dataclass(frozen=True)
class WriteCall:
    file: str  # relative to the package root
    line: int
    function: str  # Class.method enclosing the call
    expression: str  # the call as written (helper calls: the helper call)
    variants: tuple[Shape, ...]
    via: str = ""  # the file's own helper the call went through
    branch: Chain = ()  # the enclosing if tests, outermost first (census_branches)


@dataclass(frozen=True)
class Census:
    root: str
    calls: dict[str, tuple[WriteCall, ...]]  # file -> its write calls

    def for_files(self, files: tuple[str, ...]) -> tuple[WriteCall, ...]:
        return tuple(call for name in files for call in self.calls.get(name, ()))


# ---- reading one file ---------------------------------------------------------------------


@dataclass
class _Scope:
    function: ast.FunctionDef
    line: int
    env: dict[str, list[ast.expr]]  # helper parameters -> the caller's expressions
    outer: _Scope | None = None


def _assignments(function: ast.FunctionDef, name: str, before: int) -> list[ast.expr]:
    found = []
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno < before and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found.append(node.value)
    return found


def _resolve(expr: ast.expr, scope: _Scope, depth: int = 0) -> list[tuple[ast.expr, _Scope]]:
    """The expressions a name can stand for: its assignments before the call, or for a helper's
    parameter, the caller's argument (resolved in the caller)."""
    if not isinstance(expr, ast.Name) or depth > 4:
        return [(expr, scope)]
    if expr.id in scope.env and scope.outer is not None:
        return [
            hit for value in scope.env[expr.id] for hit in _resolve(value, scope.outer, depth + 1)
        ]
    values = [
        value
        for value in _assignments(scope.function, expr.id, scope.line)
        if expr.id not in {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    ]
    if not values:
        return [(expr, scope)]
    return [hit for value in values for hit in _resolve(value, scope, depth + 1)]


def _branches(expr: ast.expr, scope: _Scope) -> list[str]:
    """Source text per alternative: names resolved, `a if c else b` split into a and b."""
    texts = []
    for value, inner in _resolve(expr, scope):
        if isinstance(value, ast.IfExp):
            texts += _branches(value.body, inner) + _branches(value.orelse, inner)
        else:
            texts.append(ast.unparse(value))
    return list(dict.fromkeys(texts))


def _flat_text(expr: ast.expr | None, scope: _Scope) -> list[str]:
    """Whole-expression text after resolving names (a conditional stays one alternative)."""
    if expr is None:
        return ["None"]
    return list(
        dict.fromkeys(
            ast.unparse(value) if not isinstance(value, ast.Name) else value.id
            for value, _ in _resolve(expr, scope)
        )
    )


def loc_target(text: str) -> str:
    """cache_loc: the encoder loc on cross-attention layers; out_cache_loc: always the batch's."""
    if "encoder_out_cache_loc" in text or text == "cache_loc":
        return "cache_loc"
    if "out_cache_loc" in text:
        return "out_cache_loc"
    return text


def _targets(texts: list[str]) -> list[str]:
    """A name assigned out_cache_loc and, for cross-attention, the encoder loc is one cache_loc."""
    targets = list(dict.fromkeys(loc_target(text) for text in texts))
    return [t for t in targets if t != "out_cache_loc"] if "cache_loc" in targets else targets


def swa_source(text: str) -> str | None:
    if text == "None":
        return None
    return "swa_out_cache_loc" if "swa_out_cache_loc" in text else text


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _loc_shapes(expr: ast.expr, scope: _Scope) -> list[tuple[str, str, str | None]]:
    """(loc kind, target, swa) per alternative of the loc argument."""
    shapes = []
    for value, inner in _resolve(expr, scope):
        func = value.func if isinstance(value, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("for_layer", "for_batch"):
            target = "cache_loc" if name == "for_layer" else "out_cache_loc"
            for swa in _flat_text(_keyword(value, "swa_loc"), inner):
                shapes.append((name, target, swa_source(swa)))
        elif name == "KVWriteLoc":
            swa_expr = value.args[1] if len(value.args) > 1 else _keyword(value, "swa_loc")
            targets = _targets(
                _flat_text(value.args[0] if value.args else _keyword(value, "loc"), inner)
            )
            for target in targets:
                for swa in _flat_text(swa_expr, inner):
                    shapes.append(("KVWriteLoc", target, swa_source(swa)))
        else:
            shapes += [("bare", target, None) for target in _targets(_flat_text(value, inner))]
    return list(dict.fromkeys(shapes))


def _door_shapes(call: ast.Call, scope: _Scope) -> list[Shape]:
    door = call.func.attr
    args = call.args
    if len(args) < 2 or any(isinstance(arg, ast.Starred) for arg in args[:2]):
        return [Shape(door, "unknown", ast.unparse(call), None, False, ())]
    swa_kw = _keyword(call, "swa_loc")
    scale_exprs = list(args[4:6]) or [
        e for e in (_keyword(call, "k_scale"), _keyword(call, "v_scale")) if e
    ]
    scale_options = (
        [_branches(expr, scope) for expr in scale_exprs] if door == "set_kv_buffer" else []
    )
    shapes = []
    for loc, target, swa in _loc_shapes(args[1], scope):
        swa_options = (
            [swa_source(t) for t in _flat_text(swa_kw, scope)] if swa_kw is not None else [swa]
        )
        for swa_value in swa_options:
            for scales in _scale_combinations(scale_options):
                shapes.append(
                    Shape(door, loc, target, swa_value, swa_kw is not None, tuple(scales))
                )
    return list(dict.fromkeys(shapes))


def _scale_combinations(options: list[list[str]]) -> list[tuple[str, ...]]:
    """k and v scales chosen by the same condition pair up branch by branch; otherwise every
    combination is possible."""
    if len(options) == 2 and len(options[0]) == len(options[1]):
        return list(zip(*options))
    return list(itertools.product(*options))


def _is_door(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITE_DOORS
    )


def _helper_name(call: ast.Call, helpers: dict[str, ast.FunctionDef]) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name if name in helpers else None


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found += [
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, ast.FunctionDef)
            ]
    return found


def _bind(helper: ast.FunctionDef, call: ast.Call) -> dict[str, list[ast.expr]]:
    params = [arg.arg for arg in helper.args.args]
    if params and params[0] == "self":
        params = params[1:]
    defaults = dict(zip(reversed(params), reversed(helper.args.defaults)))
    bound = {name: [value] for name, value in defaults.items()}
    bound.update({name: [value] for name, value in zip(params, call.args)})
    bound.update({kw.arg: [kw.value] for kw in call.keywords if kw.arg})
    return bound


def _parameters(function: ast.FunctionDef) -> set[str]:
    args = function.args
    return {arg.arg for arg in args.posonlyargs + args.args + args.kwonlyargs} - {"self"}


def _forwards_its_loc(function: ast.FunctionDef, door: ast.Call) -> bool:
    """The door's loc is one of the function's parameters, bare or as KVWriteLoc's first
    argument: the caller chose it. A forward path reads it off the batch (an attribute)."""
    loc = door.args[1] if len(door.args) > 1 else _keyword(door, "loc")
    if loc is None:
        return False
    scope = _Scope(function, door.lineno, {})
    parameters = _parameters(function)
    for value, _ in _resolve(loc, scope):
        func = value.func if isinstance(value, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("KVWriteLoc", "for_layer", "for_batch"):
            first = value.args[0] if value.args else _keyword(value, "loc")
            value = _resolve(first, scope)[0][0] if first is not None else value
        if isinstance(value, ast.Name) and value.id in parameters:
            return True
    return False


def _write_helpers(
    functions: list[tuple[str, ast.FunctionDef]], calls_in: dict[int, list[ast.Call]]
) -> dict[str, ast.FunctionDef]:
    """A file's own write helpers, known by what they do, not by their name (a rename must not
    change the census): called by the file's other functions, and writing a loc their caller
    hands them."""
    called = set()
    for _, function in functions:
        for node in calls_in[id(function)]:
            func = node.func
            if isinstance(func, ast.Attribute) and getattr(func.value, "id", None) == "self":
                called.add(func.attr)
            elif isinstance(func, ast.Name):
                called.add(func.id)
    return {
        function.name: function
        for _, function in functions
        if function.name in called
        if any(_is_door(n) and _forwards_its_loc(function, n) for n in calls_in[id(function)])
    }


def census_file(path: Path, relative: str) -> tuple[WriteCall, ...]:
    return census_text(path.read_text(), relative)


@functools.lru_cache(maxsize=None)
def census_text(text: str, relative: str) -> tuple[WriteCall, ...]:
    """The write calls of one file's text. Kept by text: a campaign's judges, forked from one
    process (harness/run/forked_judges.py), re-read only the files their copy changed."""
    if not any(door in text for door in WRITE_DOORS):
        return ()  # every call it keeps names a door, directly or in a helper's body
    functions = _functions(ast.parse(text))
    # Each function walked once: its calls are all the census reads of it.
    calls_in = {
        id(function): [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        for _, function in functions
    }
    helpers = _write_helpers(functions, calls_in)
    calls = []
    for qualified, function in functions:
        if function.name in helpers:
            continue  # reached through its callers, with their arguments
        writes = [n for n in calls_in[id(function)] if _is_door(n) or _helper_name(n, helpers)]
        if not writes:
            continue
        conditions = Conditions(function)
        for node in writes:
            scope = _Scope(function, node.lineno, {})
            if _is_door(node):
                calls.append(
                    WriteCall(
                        relative,
                        node.lineno,
                        qualified,
                        ast.unparse(node),
                        tuple(_door_shapes(node, scope)),
                        branch=conditions.of(node),
                    )
                )
            elif (name := _helper_name(node, helpers)) is not None:
                helper = helpers[name]
                variants = [
                    shape
                    for inner in calls_in[id(helper)]
                    if _is_door(inner)
                    for shape in _door_shapes(
                        inner, _Scope(helper, inner.lineno, _bind(helper, node), scope)
                    )
                ]
                calls.append(
                    WriteCall(
                        relative,
                        node.lineno,
                        qualified,
                        ast.unparse(node),
                        tuple(dict.fromkeys(variants)),
                        via=name,
                        branch=conditions.of(node),
                    )
                )
    return tuple(calls)


def census(root: Path, models: dict[str, BackendModel] = BACKEND_MODELS) -> Census:
    """Every write call of the attention backends (and the files the models name) under `root`,
    the folder that holds the `sglang` package."""
    root = Path(root)
    names = {str(path.relative_to(root)) for path in (root / ATTENTION_DIR).glob("*.py")}
    names |= {name for model in models.values() for name in model.files if (root / name).is_file()}
    calls = {}
    for name in sorted(names):
        try:
            found = census_file(root / name, name)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        if found:
            calls[name] = found
    return Census(str(root), calls)


# ---- comparing with the model -------------------------------------------------------------
