"""A release's write doors: every method of its KV-cache pools that writes tokens into the cache,
read from its own source rather than from a list of classes we know, so that a door a later
release adds shows up without a code change. Each door is either driven (the pool kinds whose
cells call it) or not, with the reason.

A door is a method named `set_*buffer*` on a class in the pool folders (mem_cache/ and
hardware_backend/), except the setters in NOT_DOORS, which set flags or sizes and write no token.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from pools.layouts.kinds import LAYOUT_KINDS
from scenarios.model import MLA_POOL_KINDS

POOL_FOLDERS = ("sglang/srt/mem_cache", "sglang/srt/hardware_backend")
DOOR_NAME = re.compile(r"^set_\w*buffer\w*$")
NOT_DOORS = {
    "set_host_memory_buffer_only": "a radix-tree flag: the host tier holds one node per intent",
    "set_kv_buffer_tensors": "rebinds the buffer tensors; writes no token",
    "set_dp_buffer_len": "a data-parallel size",
    "set_local_dp_buffer_len": "a data-parallel size",
    "set_buffer_context": "a context switch, not a write",
}
# The SGLang class each pool kind is built from: the base kinds' in harness/run/pool_factory.py,
# the layout kinds' in pools/layouts/kinds.py.
KIND_CLASSES = {
    "mha": "MHATokenToKVPool",
    "mla": "MLATokenToKVPool",
    "swa_mha": "SWAKVPool",
    "swa_mla": "SWAKVPool",
    **{kind: layout.class_name for kind, layout in LAYOUT_KINDS.items()},
}
# Why a door no pool kind drives stays undriven, by class; a class not named here is "not
# modelled yet", whatever it is. Measured on 0.5.23 (constructing each on this CPU machine).
_FP4 = (
    "the loader does not offer it: measured on 0.5.23, MLATokenToKVPoolFP4's doors launch a "
    "Triton kernel on a CPU ('0 active drivers'), and on MHATokenToKVPoolFP4 the judge has no "
    "FP4 block scale for a non-finite block, where SGLang casts inf to uint8"
)
UNDRIVEN = {
    "MHATokenToKVPoolFP4": _FP4,
    "MLATokenToKVPoolFP4": _FP4,
    "NoOpMHATokenToKVPool": "writes nothing by design (a pool for layers without a KV cache)",
    "MHATokenToKVPoolMXFP8": "not modelled yet: the MXFP8 store's torch path and its scale "
    "buffers (slot 0 kept, test_mxfp8_kv_reserved_slot.py) have no pool kind",
    "HybridLinearKVPool": "not modelled yet: constructs on a CPU with mamba_pool=None; its full "
    "layers write at full_loc, which no scenario passes",
    "MHATokenToKOnlyPool": "not modelled yet: a K-only index pool (set_k_buffer) with no pool kind",
    "MiniMaxSparseKVPool": "not modelled yet: constructs on a CPU with explicit start/end layers; "
    "its set_kv_buffer refuses on purpose and its index pool is K-only",
    "UnifiedSWAKVPool": "not modelled yet: refuses a loc not marked physical, and writes full "
    "layers at full_loc; no scenario marks locs",
    "UnifiedMHAKVPool": "not modelled yet: strided per-layer views and the physical mark",
    "UnifiedMLAKVPool": "not modelled yet: strided per-layer views and the physical mark",
}
FOLDER_REASONS = {
    "/npu/": "an Ascend pool: its store is torch_npu's, and torch_npu is absent here",
    "/mlx/": "a stand-in cache of the MLX (Apple) model runner",
}
NOT_OFFERED = "a pool kind models it, but this SUT's loader does not offer the class"


@dataclass(frozen=True)
class Door:
    file: str  # relative to the release root
    cls: str
    method: str
    line: int
    driven_by: tuple[str, ...] = ()  # the pool kinds whose cells call it
    reason: str = ""  # why no pool kind drives it

    def describe(self) -> str:
        where = f"{self.cls}.{self.method} ({Path(self.file).name}:{self.line})"
        if self.driven_by:
            return f"{where}: driven by {', '.join(self.driven_by)}"
        return f"{where}: not driven: {self.reason}"


def driven_doors(offered: Iterable[str]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(class, door) -> the pool kinds whose cells call it on a SUT that offers the classes
    `offered`: set_kv_buffer on every kind, set_mla_kv_buffer too on MLA kinds (the MLA
    backends' call)."""
    offered = set(offered)
    driven: dict[tuple[str, str], tuple[str, ...]] = {}
    for kind, cls in KIND_CLASSES.items():
        if cls not in offered:
            continue
        doors = (
            ("set_kv_buffer", "set_mla_kv_buffer") if kind in MLA_POOL_KINDS else ("set_kv_buffer",)
        )
        for door in doors:
            driven[cls, door] = driven.get((cls, door), ()) + (kind,)
    return driven


def _abstract(function: ast.AST) -> bool:
    """A body that only raises NotImplementedError or is `...` (the KVCache interface)."""
    body = [
        node
        for node in function.body
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    if not body:
        return True
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _doors_in(path: Path) -> Iterator[tuple[str, str, int]]:
    text = path.read_text(errors="replace")
    if "def set_" not in text:
        return
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and DOOR_NAME.match(item.name)
                    and item.name not in NOT_DOORS
                    and not _abstract(item)
                ):
                    yield node.name, item.name, item.lineno


def write_doors(root: Path, offered: Iterable[str]) -> list[Door]:
    """Every write door under the release root `root` (the folder holding `sglang/`), on a SUT
    that offers the pool classes `offered` (the SUT protocol's: detect.REQUIRED_NAMES)."""
    driven = driven_doors(offered)
    doors = []
    for folder in POOL_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = str(path.relative_to(root))
            for cls, method, line in _doors_in(path):
                kinds = driven.get((cls, method), ())
                if kinds:
                    doors.append(Door(relative, cls, method, line, kinds))
                    continue
                reason = UNDRIVEN.get(cls) or next(
                    (why for part, why in FOLDER_REASONS.items() if part in relative),
                    NOT_OFFERED if cls in KIND_CLASSES.values() else "not modelled yet",
                )
                doors.append(Door(relative, cls, method, line, reason=reason))
    return doors


def counts(doors: Sequence[Door]) -> tuple[int, int]:
    """(driven, all) of `doors`."""
    return sum(bool(door.driven_by) for door in doors), len(doors)


def driven_count(doors: Sequence[Door]) -> str:
    """`write doors driven: N of M`, for the SUT lines of a run."""
    return "write doors driven: {} of {}".format(*counts(doors))
