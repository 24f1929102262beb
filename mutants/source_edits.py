"""How a release-source record edits a copy of `sglang/` (mutants/release_source.py holds the
records): text transforms that raise `TransformMissed` where they match nothing, an edit of named
files, a move of definitions to another module, and the record itself with the slice it runs on.
Data and text only, like the catalogue."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Literal

Kind = Literal["refactor", "fault"]
Transform = Callable[[str], str]

# The cheap slice every record runs on unless it says otherwise: one token-major, one SWA and one
# latent pool, through the plain model and two backends that run as release code on a CPU.
DEFAULT_POOLS = ("mha", "swa_mha", "mla")
DEFAULT_DTYPES = ("bf16",)
DEFAULT_BACKENDS = ("plain", "fa3", "triton")


class TransformMissed(ValueError):
    """A transform found nothing to change in the file it was given."""


def sub(pattern: str, replacement: str, count: int = 0, flags: int = 0) -> Transform:
    """A regex substitution that raises when it changes nothing (count 0: every match)."""
    compiled = re.compile(pattern, flags)

    def transform(text: str) -> str:
        changed, hits = compiled.subn(replacement, text, count=count)
        if hits == 0:
            raise TransformMissed(f"no match for /{pattern}/")
        return changed

    return transform


def chain(*transforms: Transform) -> Transform:
    """Transforms applied in order; each must change something."""

    def transform(text: str) -> str:
        for step in transforms:
            text = step(text)
        return text

    return transform


@dataclass(frozen=True)
class SourceEdit:
    """One transform over `path` (relative to the sglang package). A path with `*` is a glob:
    the transform is applied to every matching file it changes, and must change at least one
    (a rename at every use); a plain path must exist and change."""

    path: str
    transform: Transform

    @property
    def is_glob(self) -> bool:
        return "*" in self.path


@dataclass(frozen=True)
class SourceMove:
    """Top-level definitions of `path` moved to a new module `to` (both relative to the sglang
    package), with a re-export left where they stood: those of `names` the release has (the first
    is required, else TransformMissed) must stand together in `path`; `header` is the new
    module's imports."""

    path: str
    to: str
    names: tuple[str, ...]
    header: str

    @property
    def is_glob(self) -> bool:
        return False

    def split(self, text: str, module: str) -> tuple[str, str]:
        """(what `path` becomes, the new module's text); `module` is `to` as a dotted name."""
        tree = ast.parse(text)
        nodes = [n for n in tree.body if getattr(n, "name", None) in self.names]
        if self.names[0] not in {n.name for n in nodes}:
            raise TransformMissed(f"no top-level {self.names[0]}")
        first = min(n.lineno if not n.decorator_list else n.decorator_list[0].lineno for n in nodes)
        last = max(n.end_lineno for n in nodes)
        between = [n for n in tree.body if first <= n.lineno <= last and n not in nodes]
        if between:
            raise TransformMissed(f"{self.names} do not stand together in {self.path}")
        lines = text.splitlines(keepends=True)
        moved = "".join(lines[first - 1 : last])
        names = ", ".join(n.name for n in nodes)
        export = f"from {module} import {names}  # noqa: F401 (moved)\n"
        return "".join(lines[: first - 1]) + export + "".join(lines[last:]), self.header + moved


@dataclass(frozen=True)
class ReleaseMutant:
    name: str
    kind: Kind
    description: str
    edits: tuple[SourceEdit | SourceMove, ...]
    pools: tuple[str, ...] = DEFAULT_POOLS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    # The file a fault's finding should name (release_site or the finding text), for the
    # "names the release file" column; empty for a refactor.
    expect_file: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("refactor", "fault"):
            raise ValueError(f"{self.name}: kind must be refactor or fault, not {self.kind!r}")
        if not self.edits:
            raise ValueError(f"{self.name}: no edits")
        if self.kind == "fault" and not self.expect_file:
            raise ValueError(f"{self.name}: a fault names the file its finding should point at")
