"""How the SGLang loader builds a release's optional pool classes behind the SUT protocol's
constructor keywords (harness/sut/load/optional_pools.py declares which, and offers them): a
unified pool over a UnifiedKVPool of the release's own sub-pool specs, a page-interleave pool with
its shard group stood in, a layer-split pool with its attention context-parallel group stood in
while it constructs, the MHA pool under its head-major layout switch.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, Optional
from unittest.mock import patch

import torch

from backends.sglang_names import (
    AITER_5D_SWITCHES,
    AITER_LAYOUT_SWITCH,
    CPU_FP8_RECIPE,
    ENVIRONMENT_REGISTRY,
    HND_SWITCH,
    KV_CACHE_QUANT_FACTORY,
    KV_CACHE_QUANT_METHODS,
)


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


def unified_mha(unified: ModuleType) -> Callable[..., Any]:
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


def unified_mla(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedMLATokenToKVPool behind the MLA constructor, as unified_mha."""

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


def unified_swa(unified: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedSWAKVPool behind SWAKVPool's constructor plus `swa_slot_base`: a
    UnifiedKVPool whose grow-up full and grow-down SWA sub-pools (the release's MHASubPoolSpec,
    entry sizes and views) share one buffer sized so that SWA slots swa_slot_base to
    swa_slot_base + size_swa + page_size fit above every full slot's bytes, as the two-ended
    allocator keeps them (pools.kinds.landing.unified_swa_base)."""

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


def unified_draft_swa(draft_pool: ModuleType) -> Callable[..., Any]:
    """The release's UnifiedDraftSWAKVPool behind unified_swa's constructor plus the fused-draft
    placement (host_layer_num, runner, runner_num): the target's full and SWA MHASubPoolSpecs of
    host_layer_num layers each carry a DenseDraftRegion of runner_num runners' lanes, each runner
    all of the draft's layers of that side (FusedDraftPlacement.from_counts), and the pool binds
    runner `runner`'s lanes in layer order, as the draft binder does. Its doors never translate,
    so no host allocator is needed."""
    from sglang.srt.mem_cache import unified_memory_pool as unified
    from sglang.srt.mem_cache.layout import fused_draft

    def UnifiedDraftSWAKVPool(  # noqa: N802 - SGLang's class name, as the pool kind names it
        size: int, size_swa: int, page_size: int, dtype: Any, head_num: int, head_dim: int,
        swa_attention_layer_ids: list[int], full_attention_layer_ids: list[int], device: str,
        swa_slot_base: int, host_layer_num: int, runner: int, runner_num: int,
        v_head_dim: int | None = None, enable_memory_saver: bool = False,
    ) -> Any:  # fmt: skip
        store = _store_dtype(dtype)
        layers = {"full": full_attention_layer_ids, "swa": swa_attention_layer_ids}
        regions = {
            side: fused_draft.DenseDraftRegion(
                lane_num=runner_num * len(ids),
                head_num=head_num,
                head_dim=head_dim,
                v_head_dim=v_head_dim,
                store_dtype=store,
                kv_dtype=dtype,
            )
            for side, ids in layers.items()
        }
        placement = fused_draft.FusedDraftPlacement.from_counts(
            counts={side: [len(ids)] * runner_num for side, ids in layers.items()},
            regions=regions,
        )
        full, swa = (
            unified.MHASubPoolSpec(
                name=side,
                layer_num=host_layer_num,
                grow_direction=direction,
                head_num=head_num,
                head_dim=head_dim,
                v_head_dim=v_head_dim,
                store_dtype=store,
                kv_cache_dtype=dtype,
                draft_region=regions[side],
            )
            for side, direction in (("full", "up"), ("swa", "down"))
        )
        if swa_slot_base * swa.entry_bytes() < (size + page_size) * full.entry_bytes():
            raise ValueError(f"swa_slot_base {swa_slot_base} overlaps the full sub-pool's bytes")
        buffer = unified.UnifiedKVPool(
            total_bytes=(swa_slot_base + size_swa + page_size) * swa.entry_bytes(),
            sub_pool_specs=[full, swa], device=device, enable_memory_saver=enable_memory_saver,
            page_size=page_size, fused_draft=placement,
        )  # fmt: skip
        lanes = {
            side: dict(zip(sorted(ids), placement.lanes_for(runner, side)))
            for side, ids in layers.items()
        }
        return draft_pool.UnifiedDraftSWAKVPool(
            unified_buffer=buffer, host_allocator=None, page_size=page_size,
            full_layer_lanes=lanes["full"], swa_layer_lanes=lanes["swa"],
        )  # fmt: skip

    return UnifiedDraftSWAKVPool


def layer_split_dsa(memory_pool: ModuleType) -> Callable[..., Any]:
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


def page_interleave(class_name: str) -> Callable[[ModuleType], Callable[..., Any]]:
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


class NotTheDesign(ValueError):
    """The release's class built, but it is not the design the kind models (its pool ignores the
    switch that selects the kind's layout): the kind cannot apply to that release, never a
    skip (harness/sut/load/optional_pools.py counts it absent)."""


def hnd_mha(memory_pool: ModuleType) -> Callable[..., Any]:
    """The release's MHATokenToKVPool built with SGLANG_USE_HND_KVCACHE set (the mha_hnd kind):
    its (pages, heads, page_size, dim) buffers and its door's page-and-offset scatter are the
    release's own, configured as a server would be. A release whose pool ignores the switch
    raises NotTheDesign here, so the kind cannot apply there."""
    base = memory_pool.MHATokenToKVPool

    def MHATokenToKVPoolHND(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - the kind's name
        with patch.dict(os.environ, {HND_SWITCH: "1"}):  # as it was after, whatever happens
            pool = base(*args, **kwargs)
        # Known by what it built: head-major pages are 4-D, token-major rows 3-D.
        if pool.get_key_buffer(pool.start_layer).dim() != 4:
            raise NotTheDesign(f"this release's MHATokenToKVPool does not take {HND_SWITCH}")
        return pool

    return MHATokenToKVPoolHND


def cpu_fp8_mha(memory_pool: ModuleType) -> Callable[..., Any]:
    """The release's MHATokenToKVPool as a CPU server with an fp8_e4m3 cache builds it (the
    mha_cpu_fp8 kind): quant_method the release's own CPU FP8 recipe, as its
    kv_cache_configurator asks for it. A release without the recipe, or whose pool takes no
    quant_method, raises NotTheDesign: the kind cannot apply there."""
    base = memory_pool.MHATokenToKVPool

    def MHATokenToKVPoolCPUFP8(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - the kind's name
        try:
            methods = importlib.import_module(KV_CACHE_QUANT_METHODS)
            method = getattr(methods, KV_CACHE_QUANT_FACTORY)(CPU_FP8_RECIPE)
        except (ImportError, AttributeError, ValueError) as error:
            raise NotTheDesign(f"this release has no {CPU_FP8_RECIPE} KV-cache method: {error}")
        try:
            return base(*args, quant_method=method, **kwargs)
        except TypeError as error:
            raise NotTheDesign(f"this release's MHATokenToKVPool takes no quant_method: {error}")

    return MHATokenToKVPoolCPUFP8


def has_switch(switch: str) -> Optional[bool]:
    """Whether the loaded release's environment registry has `switch` (None: it has no registry
    to ask). Asked of the running registry, which holds a field for each switch the release
    reads."""
    module, name = ENVIRONMENT_REGISTRY
    try:
        registry = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return hasattr(registry, switch)


def aiter5d_mha(memory_pool: ModuleType) -> Callable[..., Any]:
    """The release's MHATokenToKVPool built under its 5-D layout switches (the mha_aiter5d
    kind), where it builds one. On this machine no release does: the layout is ROCm's. A release
    whose environment registry has no layout switch has no 5-D layout anywhere, so it raises
    NotTheDesign and the kind cannot apply there (0.5.9 to 0.5.12); one that has the switch
    raises ValueError, a class that does not construct here, so the kind's cells are skips with
    that reason."""
    base = memory_pool.MHATokenToKVPool

    def MHATokenToKVPoolAiter5D(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - the kind's name
        with patch.dict(os.environ, AITER_5D_SWITCHES):
            pool = base(*args, **kwargs)
        # Known by what it built: the SHUFFLE layout's key buffer is 5-D.
        if pool.get_key_buffer(pool.start_layer).dim() == 5:
            return pool
        if has_switch(AITER_LAYOUT_SWITCH) is False:
            raise NotTheDesign(
                f"this release reads no {AITER_LAYOUT_SWITCH} (its environment registry has "
                "none): it has no 5-D layout"
            )
        raise ValueError(
            "this release's MHATokenToKVPool builds no 5-D layout on this machine (SGLang's "
            "SHUFFLE 5-D layout, where a release has one, is ROCm AITER's)"
        )

    return MHATokenToKVPoolAiter5D
