"""The pool classes the SGLang loader offers beyond the SUT protocol's three, declared as data:
each is offered where the release's module defines what it is built from, behind the SUT
protocol's constructor keywords, so the pool kinds that name it (pools/layouts/kinds.py) run on
the release's own class. The write-door census (harness/sut/probe/write_doors.py) reads
`offered_classes` to say which doors those kinds drive.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

from harness.sut.probe.detect import REQUIRED_NAMES

MEMORY_POOL = "sglang.srt.mem_cache.memory_pool"
UNIFIED = "sglang.srt.mem_cache.unified_memory_pool"


def _unified_mha(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedMHATokenToKVPool behind the MHA constructor: a UnifiedKVPool of
    size + page_size entries whose grow-up sub-pool holds the pool's layers, beside the one-layer
    grow-down sub-pool a UnifiedKVPool requires, which nothing writes. The release builds the
    entry layout and the strided views itself."""

    def UnifiedMHATokenToKVPool(  # noqa: N802 - SGLang's class name, as the pool kind names it
        size: int,
        page_size: int,
        dtype: Any,
        head_num: int,
        head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
        v_head_dim: int | None = None,
        start_layer: int | None = None,
        end_layer: int | None = None,
    ) -> Any:
        import torch

        store = torch.uint8 if dtype.itemsize == 1 and dtype.is_floating_point else dtype
        shape = dict(store_dtype=store, kv_cache_dtype=dtype)
        pool = unified.MHASubPoolSpec(
            name="kv", layer_num=layer_num, grow_direction="up", head_num=head_num,
            head_dim=head_dim, v_head_dim=v_head_dim, **shape,
        )  # fmt: skip
        spare = unified.MHASubPoolSpec(
            name="spare", layer_num=1, grow_direction="down", head_num=1,
            head_dim=16 // store.itemsize, **shape,
        )  # fmt: skip
        buffer = unified.UnifiedKVPool(
            total_bytes=(size + page_size) * pool.entry_bytes(), sub_pool_specs=[pool, spare],
            device=device, enable_memory_saver=False, page_size=page_size,
        )  # fmt: skip
        return unified.UnifiedMHATokenToKVPool(
            unified_buffer=buffer, sub_pool_name="kv", page_size=page_size,
            start_layer=start_layer, end_layer=end_layer,
        )  # fmt: skip

    return UnifiedMHATokenToKVPool


def _unified_mla(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedMLATokenToKVPool behind the MLA constructor, as _unified_mha."""

    def UnifiedMLATokenToKVPool(  # noqa: N802 - SGLang's class name, as the pool kind names it
        size: int,
        page_size: int,
        dtype: Any,
        kv_lora_rank: int,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str,
        enable_memory_saver: bool = False,
    ) -> Any:
        import torch

        store = torch.uint8 if dtype.itemsize == 1 and dtype.is_floating_point else dtype
        pool = unified.MLASubPoolSpec(
            name="kv", layer_num=layer_num, grow_direction="up", kv_lora_rank=kv_lora_rank,
            qk_rope_head_dim=qk_rope_head_dim, store_dtype=store,
        )  # fmt: skip
        spare = unified.MHASubPoolSpec(
            name="spare", layer_num=1, grow_direction="down", head_num=1,
            head_dim=16 // store.itemsize, store_dtype=store, kv_cache_dtype=dtype,
        )  # fmt: skip
        buffer = unified.UnifiedKVPool(
            total_bytes=(size + page_size) * pool.entry_bytes(), sub_pool_specs=[pool, spare],
            device=device, enable_memory_saver=False, page_size=page_size,
        )  # fmt: skip
        return unified.UnifiedMLATokenToKVPool(
            unified_buffer=buffer, sub_pool_name="kv", kv_cache_dtype=dtype, page_size=page_size
        )

    return UnifiedMLATokenToKVPool


@dataclass(frozen=True)
class OptionalPool:
    name: str  # the class name the pool kind asks the SUT for
    module: str
    parts: tuple[str, ...]  # what the module must define
    build: Callable[[ModuleType], Callable[..., Any]]


OPTIONAL_POOLS: tuple[OptionalPool, ...] = (
    OptionalPool(
        "HybridLinearKVPool",
        MEMORY_POOL,
        ("HybridLinearKVPool",),
        lambda memory_pool: memory_pool.HybridLinearKVPool,
    ),
    OptionalPool(
        "MHATokenToKVPoolFP4",
        MEMORY_POOL,
        ("MHATokenToKVPoolFP4",),
        lambda memory_pool: memory_pool.MHATokenToKVPoolFP4,
    ),
    OptionalPool(
        "UnifiedMHATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MHASubPoolSpec", "UnifiedMHATokenToKVPool"),
        _unified_mha,
    ),
    OptionalPool(
        "UnifiedMLATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MLASubPoolSpec", "MHASubPoolSpec", "UnifiedMLATokenToKVPool"),
        _unified_mla,
    ),
)


def offer_optional_pools(namespace: SimpleNamespace) -> None:
    """Set each optional pool the imported release has on the loader's namespace."""
    for pool in OPTIONAL_POOLS:
        try:
            module = importlib.import_module(pool.module)
        except Exception:  # noqa: BLE001 - a release without it, or one where it fails here
            continue
        if all(hasattr(module, part) for part in pool.parts):
            setattr(namespace, pool.name, pool.build(module))


def offered_classes(root: Path) -> tuple[str, ...]:
    """The pool classes the loader offers from the release under `root` (the folder holding
    `sglang/`), read from its source so that an unimportable release is described too."""
    offered = list(REQUIRED_NAMES)
    for pool in OPTIONAL_POOLS:
        path = root.joinpath(*pool.module.split(".")).with_suffix(".py")
        text = path.read_text(errors="replace") if path.is_file() else ""
        if all(re.search(rf"^class {part}\b", text, re.MULTILINE) for part in pool.parts):
            offered.append(pool.name)
    return tuple(offered)
