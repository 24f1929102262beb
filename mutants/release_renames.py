"""Generated refactors of a release: each private name of SGLang's write path, renamed at every use.

A refactor of the write path keeps its public write API and may rename anything else. So the
names a rename campaign may touch are those the six write-path files define (functions, methods,
class fields, attributes set on `self`, module-level constants) less the public write API below.
Read from the release's source with `ast`; no import of it, and no harness (mutants/ imports none
of it; the names module in backends/ says which keywords the harness gives constructors).
The runner that renames with rope and judges each copy is harness/run/release_renames.py.
"""

from __future__ import annotations

import ast
import builtins
import keyword
from dataclasses import dataclass
from pathlib import Path

from backends.sglang_names import POOL_CONSTRUCTOR_KEYWORDS, REQ_TO_TOKEN_POOL

# The write path, relative to the `sglang` package (a release without one of them has fewer).
WRITE_PATH = (
    "srt/mem_cache/memory_pool.py",
    "srt/mem_cache/swa_memory_pool.py",
    "srt/mem_cache/unified_memory_pool.py",
    "srt/mem_cache/unified_draft_pool.py",
    "srt/mem_cache/kv_loc_plan.py",
    "srt/model_executor/forward_batch_info.py",
)

# The public write API: what a refactor of the write path keeps by definition.
# - KVWriteLoc's constructor and its fields, which every call site builds by position.
WRITE_LOC_API = ("loc", "swa_loc", "full_loc", "physical", "for_batch", "for_layer")
# - The pool doors a call site or the harness calls, reads included: the differential reads a
#   pool back through them or through its buffers, which SGLang's own transfer code and tests
#   read by name too.
POOL_API = (
    "register_mapping", "translate_loc_from_full_to_swa", "get_key_buffer", "get_value_buffer",
    "get_kv_buffer", "k_buffer", "v_buffer", "kv_buffer", "full_kv_pool", "swa_kv_pool",
    "layers_mapping", "full_to_swa_index_mapping", "page_size", "size", "dtype", "store_dtype",
    "device", "layer_num", "head_num", "head_dim", "v_head_dim", "start_layer", "end_layer",
    "kv_lora_rank", "qk_rope_head_dim", "get_kv_cache_quant_method", "set_kv_buffer",
    "set_mla_kv_buffer",
)  # fmt: skip
# - The ForwardBatch fields a batch is built from (the scenario's data in the release's own
#   type) and the backends' own entry points read.
FORWARD_BATCH_API = (
    "out_cache_loc", "encoder_out_cache_loc", "token_to_kv_pool", "forward_mode",
    "req_pool_indices", "seq_lens", "extend_prefix_lens", "extend_seq_lens", "encoder_lens",
    "spec_info", "attn_attend_prefix_cache", "attn_cp_metadata", "dcp_kv_mask", "batch_size",
    REQ_TO_TOKEN_POOL,  # a model runner holds one by the same name, which backends read
)  # fmt: skip
# - A unified pool's constructor takes total_bytes, which every caller (the release's factories
#   and allocators, the harness's constructors) computes from each sub-pool spec's entry_bytes().
#   The campaign over 0.5.23 renamed it and the harness could no longer build a unified pool.
UNIFIED_POOL_API = ("entry_bytes",)
# The write doors by their shape: a method that sets a pool's buffers.
DOOR_PREFIX, DOOR_WORD = "set_", "buffer"
PUBLIC = frozenset(WRITE_LOC_API + POOL_API + FORWARD_BATCH_API + UNIFIED_POOL_API)
# - A field of a dataclass the pools are built from (a sub-pool spec, a draft region) that is a
#   keyword the harness gives a release constructor (backends/sglang_names.py): a dataclass's
#   fields are its constructor's keywords, which a refactor of the write path keeps as it keeps
#   any constructor's. A name that is only set on `self` stays private: rope keeps a parameter.
CONSTRUCTOR_FIELDS = frozenset(POOL_CONSTRUCTOR_KEYWORDS)


@dataclass(frozen=True)
class PrivateName:
    name: str
    kinds: tuple[str, ...]  # function, method, field, attribute, constant
    files: tuple[str, ...]  # the write-path files defining it

    @property
    def record(self) -> str:
        """The generated record's name, as the campaign stores it."""
        return f"rename_{self.name.strip('_')}"


def _definitions(tree: ast.Module) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, "function"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [(t.id, "constant") for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append((item.name, "method"))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found.append((item.target.id, "field"))
            found += [
                (sub.attr, "attribute")
                for sub in ast.walk(node)
                if isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == "self"
            ]
    return found


def is_public(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    door = name.startswith(DOOR_PREFIX) and DOOR_WORD in name
    return dunder or door or name in PUBLIC


def private_names(package: Path) -> list[PrivateName]:
    """Every private name the write-path files of the `sglang` package at `package` define,
    sorted. A name Python itself owns (a builtin, a keyword) is left out: no rename can tell
    its uses apart."""
    kinds: dict[str, set[str]] = {}
    files: dict[str, set[str]] = {}
    for relative in WRITE_PATH:
        path = package / relative
        if not path.is_file():
            continue
        for name, kind in _definitions(ast.parse(path.read_text())):
            if is_public(name) or keyword.iskeyword(name) or hasattr(builtins, name):
                continue
            kinds.setdefault(name, set()).add(kind)
            files.setdefault(name, set()).add(relative)
    return [
        PrivateName(name, tuple(sorted(kinds[name])), tuple(sorted(files[name])))
        for name in sorted(kinds)
        if not ("field" in kinds[name] and name in CONSTRUCTOR_FIELDS)  # the campaign renames
        # a name at every definition at once: the field cannot be kept apart from the attribute
    ]
