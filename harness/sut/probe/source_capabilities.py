"""The capabilities an unpacked `sglang` package declares in its source, decided statically with
`ast` (harness/sut/probe/capabilities.py probes a loaded module instead): for a release that
cannot be imported here, e.g. a cached wheel of another Python's dependencies.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from backends.sglang_names import DCP_MASK, PHYSICAL_CHECK_NAMES
from harness.sut.probe.capabilities import (
    OFFERED_CLASS_PROBES,
    PROBED,
    SKIP_INDEX,
    Capabilities,
    Unknown,
)
from harness.sut.probe.source_probe import SourceTree, always_launches_kernel, reaches_word


def _methods(cls: ast.ClassDef | None) -> dict[str, ast.FunctionDef]:
    if cls is None:
        return {}
    return {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}


def _params(node: ast.FunctionDef | None) -> list[str]:
    if node is None:
        return []
    return [arg.arg for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]


def _annotated_fields(cls: ast.ClassDef) -> tuple[str, ...]:
    return tuple(
        node.target.id
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    )


def _unwrap_arity_in_source(tree: ast.Module) -> int | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "unwrap_write_loc":
            arities = {
                len(ret.value.elts)
                for ret in ast.walk(node)
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
            }
            return arities.pop() if len(arities) == 1 else None
    return None


def _cuts_in_source(cls: ast.ClassDef) -> bool:
    post_init = _methods(cls).get("__post_init__")
    return post_init is not None and any(
        isinstance(node, ast.Assign)
        and "swa_loc" in ast.unparse(node.targets[0])
        and isinstance(node.value, ast.Subscript)
        for node in ast.walk(post_init)
    )


def probe_source(package_root: Path) -> Capabilities:
    """The capabilities an unpacked `sglang` package declares in its source (`package_root` holds
    the `sglang` folder). Decided statically, so it needs neither an import nor a device."""
    tree = SourceTree(Path(package_root))
    pool_module, swa_module = (
        "sglang.srt.mem_cache.memory_pool",
        "sglang.srt.mem_cache.swa_memory_pool",
    )
    pool_tree, swa_tree = tree.module(pool_module), tree.module(swa_module)
    if pool_tree is None or swa_tree is None:
        reason = f"no readable {pool_module} / {swa_module} under {package_root}"
        return Capabilities(unknown=tuple((name, reason) for name in PROBED))
    pools = {node.name: node for node in pool_tree.body if isinstance(node, ast.ClassDef)}
    write_loc = pools.get("KVWriteLoc")
    loc_methods = _methods(write_loc)
    swa = _methods(
        next(
            (
                node
                for node in swa_tree.body
                if isinstance(node, ast.ClassDef) and node.name == "SWAKVPool"
            ),
            None,
        )
    )
    mla_doors = [
        tree.method(pool_module, "MLATokenToKVPool", name)
        for name in ("set_kv_buffer", "set_mla_kv_buffer")
    ]
    values: dict[str, Any] = {
        "write_loc": write_loc is not None,
        "write_loc_fields": _annotated_fields(write_loc) if write_loc else (),
        "for_layer": "for_layer" in loc_methods,
        "for_batch": "for_batch" in loc_methods,
        "cuts_to_loc_len": bool(write_loc) and _cuts_in_source(write_loc),
        "unwrap_arity": _unwrap_arity_in_source(pool_tree),
        "swa_loc_keyword": "swa_loc" in _params(swa.get("set_kv_buffer")),
        "dcp_mask_door": DCP_MASK
        in _params(_methods(pools.get("MHATokenToKVPool")).get("set_kv_buffer")),
        "swa_over_mla": bool(
            {"full_kv_pool_kwargs", "swa_kv_pool_kwargs"} & set(_params(swa.get("__init__")))
        ),
        "swa_dsa": "full_kv_pool_class" in _params(swa.get("__init__"))
        and "set_index_k_scale_buffer" in swa
        and "DSATokenToKVPool" in pools,
        "mla_unwraps_write_loc": write_loc is not None
        and all(reaches_word(node, resolve, "unwrap") for node, resolve in filter(None, mla_doors)),
        "physical_check": any(
            any(word in ast.unparse(pools[name]) for word in PHYSICAL_CHECK_NAMES)
            for name in ("MHATokenToKVPool", "MLATokenToKVPool", "KVCache")
            if name in pools
        ),
    }
    unknown: list[Unknown] = []
    if mla_doors[1] is None:
        values["mla_door_needs_gpu"] = None
        unknown.append(
            ("mla_door_needs_gpu", "MLATokenToKVPool has no set_mla_kv_buffer in the source")
        )
        values["mla_skips_reserved_slot"] = None
        unknown.append(
            ("mla_skips_reserved_slot", "MLATokenToKVPool has no set_mla_kv_buffer in the source")
        )
    else:
        values["mla_door_needs_gpu"] = always_launches_kernel(*mla_doors[1])
        values["mla_skips_reserved_slot"] = reaches_word(*mla_doors[1], SKIP_INDEX)
    unknown.append(("mla_door_takes_no_rope", "decided only by calling the loaded door"))
    values["prefix_valid_door"] = "set_kv_buffer_prefix_valid" in _methods(
        pools.get("MHATokenToKVPool")
    )
    unknown.append(("prefix_valid_divides_caller", "decided only by calling the loaded door"))
    unknown += [
        (name, "decided only on the loaded class")
        for name in (*OFFERED_CLASS_PROBES, "hisparse_dsa_unwraps_write_loc")
    ]
    if write_loc is not None and values["unwrap_arity"] is None:
        unknown.append(
            ("unwrap_arity", "unwrap_write_loc is absent or returns tuples of several sizes")
        )
    return Capabilities(**values, unknown=tuple(unknown))
