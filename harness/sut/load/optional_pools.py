"""The pool classes the SGLang loader offers beyond the SUT protocol's three, declared as data:
each is offered where the release's module defines what it is built from, behind the SUT
protocol's constructor keywords, so the pool kinds that name it (pools/layouts/kinds.py) run on
the release's own class. The write-door census (harness/sut/probe/write_doors.py) reads
`offered_classes` to say which doors those kinds drive.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

import torch

from harness.sut.probe.detect import REQUIRED_NAMES

MEMORY_POOL = "sglang.srt.mem_cache.memory_pool"
UNIFIED = "sglang.srt.mem_cache.unified_memory_pool"
HISPARSE = "sglang.srt.mem_cache.hisparse_memory_pool"
PAGE_INTERLEAVE = "sglang.srt.mem_cache.page_interleave_pool"
QSA = "sglang.srt.mem_cache.qsa_kv_pool"


def _store_dtype(dtype: Any) -> Any:
    """SGLang's storage dtype for a cache dtype: fp8 is kept as uint8."""
    return torch.uint8 if dtype.itemsize == 1 and dtype.is_floating_point else dtype


def _unified_buffer(
    unified: ModuleType, pool: Any, size: int, page_size: int, dtype: Any, device: str
) -> Any:
    """A UnifiedKVPool of size + page_size entries of the sub-pool `pool` (grow-up, named "kv"),
    beside the one-layer grow-down sub-pool a UnifiedKVPool requires, which nothing writes."""
    store = _store_dtype(dtype)
    spare = unified.MHASubPoolSpec(
        name="spare", layer_num=1, grow_direction="down", head_num=1,
        head_dim=16 // store.itemsize, store_dtype=store, kv_cache_dtype=dtype,
    )  # fmt: skip
    return unified.UnifiedKVPool(
        total_bytes=(size + page_size) * pool.entry_bytes(), sub_pool_specs=[pool, spare],
        device=device, enable_memory_saver=False, page_size=page_size,
    )  # fmt: skip


def _unified_mha(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedMHATokenToKVPool behind the MHA constructor, over _unified_buffer.
    The release builds the entry layout and the strided views itself."""

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
        pool = unified.MHASubPoolSpec(
            name="kv", layer_num=layer_num, grow_direction="up", head_num=head_num,
            head_dim=head_dim, v_head_dim=v_head_dim, store_dtype=_store_dtype(dtype),
            kv_cache_dtype=dtype,
        )  # fmt: skip
        return unified.UnifiedMHATokenToKVPool(
            unified_buffer=_unified_buffer(unified, pool, size, page_size, dtype, device),
            sub_pool_name="kv", page_size=page_size, start_layer=start_layer, end_layer=end_layer,
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
        pool = unified.MLASubPoolSpec(
            name="kv", layer_num=layer_num, grow_direction="up", kv_lora_rank=kv_lora_rank,
            qk_rope_head_dim=qk_rope_head_dim, store_dtype=_store_dtype(dtype),
        )  # fmt: skip
        return unified.UnifiedMLATokenToKVPool(
            unified_buffer=_unified_buffer(unified, pool, size, page_size, dtype, device),
            sub_pool_name="kv", kv_cache_dtype=dtype, page_size=page_size,
        )  # fmt: skip

    return UnifiedMLATokenToKVPool


def _unified_swa(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedSWAKVPool behind SWAKVPool's constructor plus `swa_slot_base`: a
    UnifiedKVPool whose grow-up full and grow-down SWA sub-pools (the release's MHASubPoolSpec,
    entry sizes and views) share one buffer sized so that SWA slots swa_slot_base to
    swa_slot_base + size_swa + page_size fit above every full slot's bytes, as the two-ended
    allocator keeps them (scenarios.slots.unified_swa_base)."""

    def UnifiedSWAKVPool(  # noqa: N802 - SGLang's class name, as the pool kind names it
        size: int,
        size_swa: int,
        page_size: int,
        dtype: Any,
        head_num: int,
        head_dim: int,
        swa_attention_layer_ids: list[int],
        full_attention_layer_ids: list[int],
        device: str,
        swa_slot_base: int,
        v_head_dim: int | None = None,
        enable_memory_saver: bool = False,
    ) -> Any:
        full, swa = (
            unified.MHASubPoolSpec(
                name=name,
                layer_num=len(layers),
                grow_direction=direction,
                head_num=head_num,
                head_dim=head_dim,
                v_head_dim=v_head_dim,
                store_dtype=_store_dtype(dtype),
                kv_cache_dtype=dtype,
            )
            for name, layers, direction in (
                ("full", full_attention_layer_ids, "up"),
                ("swa", swa_attention_layer_ids, "down"),
            )
        )
        if swa_slot_base * swa.entry_bytes() < (size + page_size) * full.entry_bytes():
            raise ValueError(f"swa_slot_base {swa_slot_base} overlaps the full sub-pool's bytes")
        buffer = unified.UnifiedKVPool(
            total_bytes=(swa_slot_base + size_swa + page_size) * swa.entry_bytes(),
            sub_pool_specs=[full, swa], device=device, enable_memory_saver=enable_memory_saver,
            page_size=page_size,
        )  # fmt: skip
        return unified.UnifiedSWAKVPool(
            unified_buffer=buffer, swa_attention_layer_ids=swa_attention_layer_ids,
            full_attention_layer_ids=full_attention_layer_ids, page_size=page_size,
        )  # fmt: skip

    return UnifiedSWAKVPool


def _layer_split_dsa(memory_pool: ModuleType) -> Callable[..., Any]:
    """The release's LayerSplitDSATokenToKVPool behind the DSA constructor plus (layer_shard_rank,
    layer_shard_size). Its buffers read the attention context-parallel group once, to decide on a
    broadcast communicator: a group of layer_shard_size ranks without one (pynccl_comm None) is
    stood in while it constructs. Its writes read no group."""

    def LayerSplitDSATokenToKVPool(  # noqa: N802 - SGLang's class name, as the pool kind names it
        *, layer_shard_rank: int, layer_shard_size: int, device: str, **kwargs: Any
    ) -> Any:
        from sglang.srt.runtime_context import get_parallel

        group = SimpleNamespace(
            world_size=layer_shard_size, rank_in_group=layer_shard_rank, pynccl_comm=None,
            cpu_group=None, device=torch.device(device),
        )  # fmt: skip
        with get_parallel().override(attn_cp_group=group):
            return memory_pool.LayerSplitDSATokenToKVPool(
                device=device, layer_shard_rank=layer_shard_rank,
                layer_shard_size=layer_shard_size, **kwargs,
            )  # fmt: skip

    return LayerSplitDSATokenToKVPool


def _page_interleave(class_name: str) -> Callable[[ModuleType], Callable[..., Any]]:
    """The release's page-interleave pool `class_name` behind the MHA or MLA constructor plus
    (shard_rank, shard_size). The shard group is stood in: a GroupCoordinator of shard_size ranks
    whose cpu_group is a one-rank StatelessProcessGroup, so the release's PyNcclCommunicator is
    built and disabled (world size 1), as on any single rank. Its gathers serve reads during a
    sharded extend, which the doors modelled here do not start."""

    def build(page_interleave_pool: ModuleType) -> Callable[..., Any]:
        from sglang.srt.distributed.utils import StatelessProcessGroup
        from sglang.srt.mem_cache.page_interleave import PageShardSpec

        cls = getattr(page_interleave_pool, class_name)

        def construct(*, page_size: int, device: str, shard_rank: int, shard_size: int,
                      **kwargs: Any) -> Any:  # fmt: skip
            spec = PageShardSpec(
                shard_rank=shard_rank, shard_size=shard_size, page_size=page_size,
                max_prefix_tokens=shard_size * page_size, chunk_tokens=page_size,
            )  # fmt: skip
            group = SimpleNamespace(
                world_size=shard_size, rank_in_group=shard_rank, device=torch.device(device),
                cpu_group=StatelessProcessGroup(rank=0, world_size=1, store=None),
            )  # fmt: skip
            return cls(page_size=page_size, device=device, shard_spec=spec, shard_group=group,
                       **kwargs)  # fmt: skip

        construct.__name__ = class_name
        return construct

    return build


# A tiny pool of each shape, built once at load time: a class that does not construct on this
# machine (0.5.12's FP4 pool imports a quantiser its release lacks) is not offered.
_MHA_TRIAL = dict(
    size=4, page_size=1, head_num=1, head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False,
)  # fmt: skip
# DSATokenToKVPool's: 64-token pages, 128-wide indexer keys, the latent row's width.
_DSA_TRIAL = dict(
    size=128, page_size=64, kv_lora_rank=16, qk_rope_head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False, index_head_dim=128, kv_cache_dim=32,
)  # fmt: skip
_MLA_TRIAL = dict(
    size=4, page_size=1, kv_lora_rank=16, qk_rope_head_dim=16, layer_num=1, device="cpu",
    enable_memory_saver=False,
)  # fmt: skip
_HYBRID_TRIAL = dict(
    size=4, page_size=1, head_num=1, head_dim=16, full_attention_layer_ids=[1], device="cpu",
    mamba_pool=None,
)  # fmt: skip


@dataclass(frozen=True)
class OptionalPool:
    name: str  # the class name the pool kind asks the SUT for
    module: str
    parts: tuple[str, ...]  # what the module must define
    build: Callable[[ModuleType], Callable[..., Any]]
    trial: dict  # the keywords of a tiny pool that must construct here
    # Attributes the release's class (or, as "Class.attribute", another class of its module)
    # must have for the kind's model to be its semantics: the unified kinds model pools that
    # refuse an unmarked loc (0.5.22 on; earlier unified pools took no physical mark and are
    # another design).
    marks: tuple[str, ...] = ()
    # (method, parameter) the class's doors must take for the kind's call to be the release's:
    # 0.5.15 and 0.5.16's MiniMax fused door takes no scales, and their backend passes none.
    parameters: tuple[tuple[str, str], ...] = ()
    # The layer a one-token bare-loc set_kv_buffer writes on the tiny pool (None: no write), for
    # a class whose door imports what it needs only when it first writes (0.5.12's FP4 pool).
    trial_write_layer: int | None = None


OPTIONAL_POOLS: tuple[OptionalPool, ...] = (
    OptionalPool(
        "HybridLinearKVPool",
        MEMORY_POOL,
        ("HybridLinearKVPool",),
        lambda memory_pool: memory_pool.HybridLinearKVPool,
        dict(_HYBRID_TRIAL, dtype=torch.bfloat16),
        trial_write_layer=1,
    ),
    OptionalPool(
        "QSATokenToKVPool",
        QSA,
        ("QSATokenToKVPool",),
        lambda qsa_kv_pool: qsa_kv_pool.QSATokenToKVPool,
        dict(
            _HYBRID_TRIAL,
            page_size=4,
            dtype=torch.bfloat16,
            qsa_index_kv_heads=1,
            qsa_index_head_dim=16,
            qsa_compress_ratio=4,
            qsa_token_topk=4,
            num_request_slots=2,
        ),  # fmt: skip
        trial_write_layer=1,
    ),
    OptionalPool(
        "MHATokenToKVPoolFP4",
        MEMORY_POOL,
        ("MHATokenToKVPoolFP4",),
        lambda memory_pool: memory_pool.MHATokenToKVPoolFP4,
        dict(_MHA_TRIAL, dtype=torch.float4_e2m1fn_x2),
        trial_write_layer=0,
    ),
    # Its store is a Triton kernel: it writes here under the interpreter (TRITON_INTERPRET=1,
    # which pools/engines/triton_mode.py sets on a machine without a GPU).
    OptionalPool(
        "MLATokenToKVPoolFP4",
        MEMORY_POOL,
        ("MLATokenToKVPoolFP4",),
        lambda memory_pool: memory_pool.MLATokenToKVPoolFP4,
        dict(_MLA_TRIAL, dtype=torch.float4_e2m1fn_x2, qk_rope_head_dim=0),
        trial_write_layer=0,
    ),
    OptionalPool(
        "MiniMaxSparseKVPool",
        MEMORY_POOL,
        ("MiniMaxSparseKVPool", "MHATokenToKOnlyPool"),
        lambda memory_pool: memory_pool.MiniMaxSparseKVPool,
        dict(
            size=4,
            page_size=1,
            dtype=torch.bfloat16,
            head_num=1,
            head_dim=16,
            idx_head_dim=16,
            dense_layer_ids=[0],
            sparse_layer_ids=[1, 2],
            disable_value_sparse_layer_ids=[2],
            device="cpu",
            start_layer=0,
            end_layer=3,
        ),  # fmt: skip
        parameters=(("set_fused_kv_index_buffer", "idx_v_scale"),),
        trial_write_layer=0,
    ),
    # Their doors translate through a mapping the trial does not register: construction only.
    OptionalPool(
        "HiSparseMHAMainPool",
        HISPARSE,
        ("HiSparseMHAMainPool",),
        lambda hisparse: hisparse.HiSparseMHAMainPool,
        dict(_MHA_TRIAL, dtype=torch.bfloat16),
    ),
    OptionalPool(
        "HiSparseDSATokenToKVPool",
        HISPARSE,
        ("HiSparseDSATokenToKVPool",),
        lambda hisparse: hisparse.HiSparseDSATokenToKVPool,
        dict(_DSA_TRIAL, size=64, dtype=torch.bfloat16),
    ),
    OptionalPool(
        "PageInterleaveMHATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveMHATokenToKVPool",),
        _page_interleave("PageInterleaveMHATokenToKVPool"),
        dict(_MHA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
        trial_write_layer=0,
    ),
    OptionalPool(
        "PageInterleaveMLATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveMLATokenToKVPool",),
        _page_interleave("PageInterleaveMLATokenToKVPool"),
        dict(_MLA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
    ),
    OptionalPool(
        "PageInterleaveDSATokenToKVPool",
        PAGE_INTERLEAVE,
        ("PageInterleaveDSATokenToKVPool",),
        _page_interleave("PageInterleaveDSATokenToKVPool"),
        dict(_DSA_TRIAL, dtype=torch.bfloat16, shard_rank=0, shard_size=2),
    ),
    OptionalPool(
        "LayerSplitDSATokenToKVPool",
        "sglang.srt.mem_cache.dsa_cache_layer_split",
        ("LayerSplitDSATokenToKVPool",),
        _layer_split_dsa,
        dict(
            _DSA_TRIAL, dtype=torch.bfloat16, layer_num=2, layer_shard_rank=0, layer_shard_size=2
        ),  # fmt: skip
    ),
    OptionalPool(
        "UnifiedMHATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MHASubPoolSpec", "UnifiedMHATokenToKVPool"),
        _unified_mha,
        dict(_MHA_TRIAL, dtype=torch.bfloat16),
        marks=("requires_physical_write_loc",),
    ),
    OptionalPool(
        "UnifiedMLATokenToKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MLASubPoolSpec", "MHASubPoolSpec", "UnifiedMLATokenToKVPool"),
        _unified_mla,
        dict(_MLA_TRIAL, dtype=torch.bfloat16),
        marks=("requires_physical_write_loc",),
    ),
    OptionalPool(
        "UnifiedSWAKVPool",
        UNIFIED,
        ("UnifiedKVPool", "MHASubPoolSpec", "UnifiedMHATokenToKVPool", "UnifiedSWAKVPool"),
        _unified_swa,
        dict(
            size=4,
            size_swa=4,
            page_size=1,
            dtype=torch.bfloat16,
            head_num=1,
            head_dim=16,
            swa_attention_layer_ids=[1],
            full_attention_layer_ids=[0],
            device="cpu",
            swa_slot_base=5,
        ),  # fmt: skip
        # Its sub-pools are the unified MHA pool, which must refuse an unmarked loc.
        marks=("UnifiedMHATokenToKVPool.requires_physical_write_loc",),
    ),
)


def _marked(module: ModuleType, class_name: str, mark: str) -> bool:
    owner, _, attribute = mark.rpartition(".")
    return bool(getattr(getattr(module, owner or class_name), attribute, False))


def _why_not(pool: OptionalPool, module: ModuleType) -> str:
    """Why the release's `pool.name` is not offered ("" when it is)."""
    if not all(hasattr(module, part) for part in pool.parts):
        return f"{pool.module} has no {', '.join(pool.parts)}"
    cls = getattr(module, pool.name)
    missing = [mark for mark in pool.marks if not _marked(module, pool.name, mark)]
    if missing:
        return f"its {pool.name} has no {', '.join(missing)}: not the design the kind models"
    for method, parameter in pool.parameters:
        if parameter not in inspect.signature(getattr(cls, method)).parameters:
            return f"its {pool.name}.{method} takes no {parameter}: not the call the kind models"
    try:
        built = pool.build(module)(**pool.trial)
    except Exception as error:  # noqa: BLE001 - any failure means: it does not construct here
        return f"its {pool.name} does not construct here: {type(error).__name__}: {error}"[:300]
    if pool.trial_write_layer is None:
        return ""
    layer = SimpleNamespace(layer_id=pool.trial_write_layer, is_cross_attention=False)
    row = torch.ones((1, 1, 16), dtype=torch.bfloat16)
    try:
        built.set_kv_buffer(layer, torch.tensor([1]), row, row.clone())
    except Exception as error:  # noqa: BLE001 - any failure means: it does not write here
        return f"its {pool.name} does not write here: {type(error).__name__}: {error}"[:300]
    return ""


def offer_optional_pools(namespace: SimpleNamespace) -> None:
    """Set each optional pool the imported release has and that constructs here on the loader's
    namespace; `optional_pools_missing` says why each other one is not offered."""
    namespace.optional_pools_missing = {}
    for pool in OPTIONAL_POOLS:
        try:
            module = importlib.import_module(pool.module)
        except Exception as error:  # noqa: BLE001 - a release without it, or one failing here
            namespace.optional_pools_missing[pool.name] = f"{pool.module} does not import: {error}"
            continue
        why = _why_not(pool, module)
        if why:
            namespace.optional_pools_missing[pool.name] = why
        else:
            setattr(namespace, pool.name, pool.build(module))


def offered_classes(root: Path) -> tuple[str, ...]:
    """The pool classes the loader offers from the release under `root` (the folder holding
    `sglang/`), read from its source so that an unimportable release is described too (its
    classes' marks are read as text; whether they construct is only known once loaded)."""
    offered = list(REQUIRED_NAMES)
    for pool in OPTIONAL_POOLS:
        path = root.joinpath(*pool.module.split(".")).with_suffix(".py")
        text = path.read_text(errors="replace") if path.is_file() else ""
        marks = tuple(mark.rpartition(".")[2] for mark in pool.marks) + tuple(
            parameter for _, parameter in pool.parameters
        )
        if all(re.search(rf"^class {part}\b", text, re.MULTILINE) for part in pool.parts) and all(
            mark in text for mark in marks
        ):
            offered.append(pool.name)
    return tuple(offered)
