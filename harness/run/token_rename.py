"""A private name renamed from a module's tokens and string literals: the rename rope cannot
make (it refuses some files of a release), and the parts of one it leaves (a dataclass's keywords,
the strings that name an attribute). harness/run/rope_rename.py decides where each applies."""

from __future__ import annotations

import ast
import io
import re
import tokenize

# The attribute accesses `x.name` a token rename reaches: all, only `self.name`, or none.
ALL, SELF, NONE = "all", "self", ""


def parse_source(text: str) -> ast.Module:
    """A module's text parsed; a leading UTF-8 byte-order mark (0.5.14's
    models/qwen2_classification.py) is not code. Line numbers stay those of the text."""
    return ast.parse(text.removeprefix("\ufeff"))


def is_parameter(texts: list[str], name: str) -> bool:
    """Whether a function of these module texts takes a parameter spelled `name`."""
    return any(
        isinstance(node, ast.arg) and node.arg == name
        for text in texts
        for node in ast.walk(parse_source(text))
    )


def _attribute_strings(text: str, name: str) -> set[tuple[int, int]]:
    """(line, character column) of each `name` string given to getattr, setattr, hasattr or
    delattr, or listed in a class's `__slots__`: a use of the attribute by name, whatever else
    the spelling names (KvBufferDesc's `row_bytes` is a slot and its constructor's keyword)."""
    lines = text.splitlines()
    keys = []
    for node in ast.walk(parse_source(text)):
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


def rename_strings(text: str, name: str, new_name: str, parameter: bool = False) -> str:
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
        for node in ast.walk(parse_source(text))
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
    classes: frozenset[str] = frozenset(), attributes: str = ALL, keywords_only: bool = False,
) -> str:  # fmt: skip
    """The rename rope could not make, made from the tokens: each definition of `name` (character
    offsets), each attribute access `.name` in the `attributes` scope (ALL, in an f-string's
    fields too; SELF, only `self.name`; NONE),
    where it is a module's function or constant every bare use (its module's and an importer's),
    and where it is a field of `classes` the keyword of a call to one of them
    (`ForwardBatch(name=...)`; only those with `keywords_only`, after rope, which leaves a
    dataclass's keywords). A parameter, a local, another function's keyword of the same
    spelling and a module of an import's dotted path are left alone."""
    bare = bool({"function", "constant"} & set(kinds)) and not keywords_only
    attributes = NONE if keywords_only else attributes
    callees = classes | FIELD_KEYWORD_CALLEES if classes else frozenset()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    imports = {
        line
        for node in ast.walk(parse_source(text))
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
        if token.type == tokenize.STRING and attributes == ALL:
            offsets += [at + inner for inner in _fstring_attributes(token.string, name)]
        if token.type != tokenize.NAME or token.string != name:
            continue
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        keyword = after == "=" and bool(calls) and calls[-1] in callees
        dotted = before is not None and before.string == "."
        module_path = dotted and token.start[0] in imports  # `from sglang.srt.x.name import`
        on_self = dotted and index > 1 and tokens[index - 2].string == "self"
        attribute = (
            dotted and not module_path and (attributes == ALL or (attributes == SELF and on_self))
        )
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
