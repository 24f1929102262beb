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
from typing import Iterable, Sequence

from pools.builtin.layouts.kinds import LAYOUT_KINDS
from pools.kinds.registry import KINDS

POOL_FOLDERS = ("sglang/srt/mem_cache", "sglang/srt/hardware_backend")
DOOR_NAME = re.compile(r"^set_\w*buffer\w*$")
NOT_DOORS = {
    "set_host_memory_buffer_only": "a radix-tree flag: the host tier holds one node per intent",
    "set_kv_buffer_tensors": "rebinds the buffer tensors; writes no token",
    "set_dp_buffer_len": "a data-parallel size",
    "set_local_dp_buffer_len": "a data-parallel size",
    "set_buffer_context": "a context switch, not a write",
}
# The SGLang class each pool kind is built from (its record's, pools/kinds/).
KIND_CLASSES = {name: kind.sglang_class for name, kind in KINDS.items()}
# What each class's doors do on this CPU machine, measured on 0.5.23 by constructing the class
# with the smallest arguments and calling each door once (the write-door census of issue 27):
# (class, door) or (class, "*") -> (status, what was measured). A class measured nowhere here is
# "not measured yet".
WRITES, NEEDS_DEVICE, NO_CONSTRUCT, REFUSES = (
    "writes on a CPU",
    "constructs on a CPU, its door needs a GPU",
    "does not construct on a CPU",
    "refuses by design",
)
# What the harness's own process does on a machine without a GPU
# (pools/builtin/engines/triton_mode.py, imported before the release): the release's Triton kernels
# are interpreted. Re-measured that way for the entries that say so (MLA FP4, the DSA index door,
# reached alone or through a hybrid linear or SWA pool, and the DeepSeekV4 doors, whose fused stores
# need a CUDA JIT build).
_INTERPRETED = "interpreted here (TRITON_INTERPRET=1, as the loader sets it)"
# The DeepSeekV4 fused stores: Triton only on ROCm; elsewhere nvcc builds a JIT module.
_CUDA_JIT = "a CUDA JIT build of the fused store (nvcc; its Triton form serves ROCm only)"
MEASURED: dict[tuple[str, str], tuple[str, str]] = {
    ("MHATokenToKVPool", "set_kv_buffer_prefix_valid"): (
        WRITES,
        "its CPU path masks the committed rows and calls set_kv_buffer with a bare loc",
    ),
    ("MHATokenToKVPoolFP4", "*"): (
        WRITES,
        "with dtype float4_e2m1fn_x2 (a non-finite block is undefined: the skip fp4-non-finite)",
    ),
    ("MLATokenToKVPoolFP4", "*"): (WRITES, "its store is a Triton kernel: " + _INTERPRETED),
    ("NoOpMHATokenToKVPool", "*"): (REFUSES, "RuntimeError: a pool for layers without a KV cache"),
    ("MHATokenToKVPoolMXFP8", "*"): (
        NEEDS_DEVICE,
        "`assert _is_cuda` where scales are passed; the unscaled bf16 path's Triton quantiser runs "
        "interpreted, but the interpreter rounds fp8 otherwise than a GPU (ties away from zero, a "
        "lost exponent carry), so its bytes would judge the interpreter, not the kernel",
    ),
    ("HybridLinearKVPool", "set_kv_buffer"): (WRITES, "with mamba_pool=None; writes at full_loc"),
    ("HybridLinearKVPool", "set_mla_kv_buffer"): (WRITES, "with mamba_pool=None and use_mla"),
    ("HybridLinearKVPool", "set_index_k_scale_buffer"): (
        WRITES,
        "use_dsa, the DSA full pool's door: " + _INTERPRETED,
    ),
    ("DSATokenToKVPool", "set_index_k_scale_buffer"): (WRITES, "a Triton kernel: " + _INTERPRETED),
    ("MHATokenToKOnlyPool", "*"): (WRITES, "a K-only index pool; layer_id is the local index"),
    ("MiniMaxSparseKVPool", "*"): (WRITES, "with explicit start_layer and end_layer"),
    ("SWAKVPool", "set_index_k_scale_buffer"): (
        WRITES,
        "a DSA full pool's door: " + _INTERPRETED,
    ),
    ("UnifiedSWAKVPool", "*"): (
        WRITES,
        "with a loc marked physical; its sub-pools' views share the buffer's bytes from byte 0, "
        "so full and SWA slots must come from the buffer's two ends",
    ),
    ("HiSparseMHAMainPool", "*"): (WRITES, "at mapping[loc] after register_mapping"),
    ("HiSparseDSATokenToKVPool", "*"): (WRITES, "at mapping[loc] after register_mapping"),
    ("LayerSplitDSATokenToKVPool", "*"): (
        WRITES,
        "only with an attention context-parallel group stood in",
    ),
    ("UnifiedDraftSWAKVPool", "*"): (WRITES, "with a fused-draft placement; ignores full_loc"),
    ("PageInterleaveMHATokenToKVPool", "*"): (WRITES, "only with a process group stood in"),
    ("PageInterleaveMLATokenToKVPool", "*"): (WRITES, "only with a process group stood in"),
    ("PageInterleaveDSATokenToKVPool", "*"): (WRITES, "only with a process group stood in"),
    ("DeepSeekV4UniformFP8KVPool", "*"): (WRITES, "pure torch"),
    ("DeepSeekV4SingleKVPool", "set_key_buffer"): (
        WRITES,
        "a byte copy of the packed fp8 nope, bf16 rope and UE8M0 scales: " + _INTERPRETED,
    ),
    ("HiSparseC4DevicePool", "set_key_buffer"): (
        WRITES,
        "at mapping[loc], the single pool's store: " + _INTERPRETED,
    ),
    ("DeepSeekV4SingleKVPool", "*"): (NEEDS_DEVICE, _CUDA_JIT),
    ("HiSparseC4DevicePool", "*"): (NEEDS_DEVICE, _CUDA_JIT),
    ("DeepSeekV4IndexerPool", "*"): (
        WRITES,
        "the DSA indexer's key store, with use_fp4_indexer=False (None reads the runtime's "
        "published config): " + _INTERPRETED + "; an FP4 cache (68-byte tokens) fails the "
        "store's page assert, its keys go through set_index_fp4 (Triton, not modelled), and "
        "aiter's FP4 layout (ROCm) keeps no index_k_with_scale_buffer at all",
    ),
    ("DeepSeekV4TokenToKVPool", "*"): (
        NO_CONSTRUCT,
        "ValueError: config namespace 'exec' not published (it needs ServerArgs with a model)",
    ),
    ("MiniMaxM3Nvfp4IndexKPool", "set_quantized_k_buffer"): (WRITES, "its quantised input"),
    ("MiniMaxM3Nvfp4MainKVPool", "set_quantized_kv_buffer"): (WRITES, "its quantised input"),
    ("MiniMaxM3Nvfp4IndexKPool", "*"): (NEEDS_DEVICE, "NVFP4 quantisation asserts SM90+"),
    ("MiniMaxM3Nvfp4MainKVPool", "*"): (NEEDS_DEVICE, "NVFP4 quantisation asserts SM90+"),
    ("MiniMaxM3Nvfp4KVPool", "*"): (NEEDS_DEVICE, "NVFP4 quantisation asserts SM90+"),
    ("QSATokenToKVPool", "*"): (WRITES, "page_size > 1, a multiple of the compress ratio"),
}
FOLDER_MEASURED = {
    "/npu/": (NO_CONSTRUCT, "an Ascend pool: its store is torch_npu's, and torch_npu is absent"),
    "/mlx/": (NO_CONSTRUCT, "a stand-in cache of the MLX (Apple) model runner"),
}
NOT_CALLED = "its class is driven, but no modelled call site calls this door"
NOT_OFFERED = "a pool kind models it, but this SUT's loader does not offer the class"
NOT_MEASURED = ("", "")


def measured(file: str, cls: str, method: str) -> tuple[str, str]:
    """(status, note) of a door on this machine: MEASURED, else its folder's, else unknown."""
    found = MEASURED.get((cls, method)) or MEASURED.get((cls, "*"))
    if found:
        return found
    return next((why for part, why in FOLDER_MEASURED.items() if part in file), NOT_MEASURED)


@dataclass(frozen=True)
class Door:
    file: str  # relative to the release root
    cls: str
    method: str
    line: int
    driven_by: tuple[str, ...] = ()  # the pool kinds whose cells call it
    reason: str = ""  # why no pool kind drives it
    status: str = ""  # what it does on this machine (MEASURED), "" where not measured

    @property
    def constructs_here(self) -> bool:
        """Its class constructs on this CPU machine (driven or measured so)."""
        return bool(self.driven_by) or self.status in (WRITES, NEEDS_DEVICE, REFUSES)

    @property
    def writes_here(self) -> bool:
        return bool(self.driven_by) or self.status == WRITES

    def describe(self) -> str:
        where = f"{self.cls}.{self.method} ({Path(self.file).name}:{self.line})"
        if self.driven_by:
            return f"{where}: driven by {', '.join(self.driven_by)}"
        return f"{where}: not driven: {self.reason}"


@dataclass(frozen=True)
class _Class:
    bases: tuple[str, ...]
    doors: dict[str, int]  # door name -> line


def _defining(cls: str, door: str, classes: dict[str, _Class]) -> str | None:
    """The class whose `door` an instance of `cls` runs: cls, else the first of its bases (depth
    first, left to right, as a single-inheritance MRO) that defines it in the release."""
    seen: set[str] = set()
    stack = [cls]
    while stack:
        name = stack.pop(0)
        if name in seen or name not in classes:
            continue
        seen.add(name)
        if door in classes[name].doors:
            return name
        stack = list(classes[name].bases) + stack
    return None


def driven_doors(
    offered: Iterable[str], classes: dict[str, _Class]
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(class, door) -> the pool kinds whose cells call it on a SUT that offers the classes
    `offered`: each kind's record's write doors (pools/kinds/ PoolKind.write_doors), each
    where the class defines or inherits it."""
    offered = set(offered)
    driven: dict[tuple[str, str], tuple[str, ...]] = {}
    for kind, cls in KIND_CLASSES.items():
        if cls not in offered:
            continue
        for door in KINDS[kind].write_doors:
            on, door = door if isinstance(door, tuple) else (cls, door)
            # A kind the release has no class of (HND: MHATokenToKVPool under its layout switch)
            # runs the door of the class its layout is built over.
            base = LAYOUT_KINDS[kind].era_class if kind in LAYOUT_KINDS else on
            owner = _defining(on, door, classes) or _defining(base, door, classes) or on
            driven[owner, door] = driven.get((owner, door), ()) + (kind,)
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


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


# A file that defines no door is not parsed: most of the folders' files, and most of the census's
# time. A door class whose bases only such files define ends its MRO walk (_defining) there,
# which can only undercount the doors driven, never overcount them; on 0.5.12 to 0.5.23 the
# census is the same either way.
DOOR_DEF = re.compile(r"def set_\w*buffer")


def _classes_in(path: Path) -> dict[str, _Class]:
    text = path.read_text(errors="replace")
    if "class " not in text or not DOOR_DEF.search(text):
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    return {
        node.name: _Class(
            tuple(_base_name(base) for base in node.bases),
            {
                item.name: item.lineno
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and DOOR_NAME.match(item.name)
                and item.name not in NOT_DOORS
                and not _abstract(item)
            },
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


def write_doors(root: Path, offered: Iterable[str]) -> list[Door]:
    """Every write door under the release root `root` (the folder holding `sglang/`), on a SUT
    that offers the pool classes `offered` (what its loader offers: the SUT protocol's three,
    detect.REQUIRED_NAMES, and harness/sut/load/optional_pools.py `offered_classes`)."""
    files = {
        str(path.relative_to(root)): _classes_in(path)
        for folder in POOL_FOLDERS
        for path in sorted((root / folder).rglob("*.py"))
    }
    classes = {name: found for found_in in files.values() for name, found in found_in.items()}
    offered = set(offered)
    driven = driven_doors(offered, classes)
    doors = []
    for relative, found_in in files.items():
        for cls, found in found_in.items():
            for method, line in found.doors.items():
                kinds = driven.get((cls, method), ())
                status, note = measured(relative, cls, method)
                if kinds:
                    doors.append(Door(relative, cls, method, line, kinds, status=status))
                    continue
                if cls in offered and cls in KIND_CLASSES.values():
                    reason = f"{NOT_CALLED} ({status}: {note})" if status else NOT_CALLED
                elif cls in KIND_CLASSES.values():
                    reason = f"{NOT_OFFERED} ({status}: {note})" if status else NOT_OFFERED
                elif not status:
                    reason = "not modelled yet (not measured on a CPU yet)"
                elif status == WRITES:
                    reason = f"not modelled yet ({status}: {note})"
                else:
                    reason = f"{status}: {note}"
                doors.append(Door(relative, cls, method, line, reason=reason, status=status))
    return doors


def counts(doors: Sequence[Door]) -> tuple[int, int]:
    """(driven, all) of `doors`."""
    return sum(bool(door.driven_by) for door in doors), len(doors)


def driven_count(doors: Sequence[Door]) -> str:
    """`write doors driven: N of M`, for the SUT lines of a run."""
    return "write doors driven: {} of {}".format(*counts(doors))


def cpu_count(doors: Sequence[Door]) -> str:
    """How many of the doors whose class constructs here, and of those that write here, are
    driven (measured on this CPU machine: MEASURED)."""
    constructs = [door for door in doors if door.constructs_here]
    writes = [door for door in constructs if door.writes_here]
    return (
        "of the {} whose class constructs on a CPU, {} driven; of the {} that also write on a "
        "CPU, {} driven".format(
            len(constructs), counts(constructs)[0], len(writes), counts(writes)[0]
        )
    )
