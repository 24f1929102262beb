"""Build a SUT's pools from a scenario with SGLang's constructor keywords (the SUT protocol).

The SWA mapping is not registered here: scenarios.materialize.ForwardStaging registers it (and
remaps it between forwards), so it is built once per execution.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from pools.builtin.fp4.fp4_storage import FP4_DTYPE
from pools.builtin.layouts.kinds import LAYOUT_KINDS, class_name_of
from pools.dtypes import dtype_spec
from pools.kinds.fixed_geometry import (
    DRAFT_HOST_LAYERS,
    DRAFT_RUNNER,
    DRAFT_RUNNERS,
    DSA_INDEX_HEAD_DIM,
    LAYER_SHARD_RANK,
    LAYER_SHARD_SIZE,
    NVFP4_HEAD_DIM,
    PAGE_SHARD_RANK,
    PAGE_SHARD_SIZE,
    QSA_COMPRESS_RATIO,
    QSA_INDEX_HEAD_DIM,
    QSA_INDEX_HEADS,
    QSA_TOKEN_TOPK,
)
from pools.kinds.landing import unified_swa_base
from scenarios.materialize import qsa_compressed_dtype
from scenarios.model import DSA_INDEX_KINDS, DSV4_LOGICAL_PAGES, Scenario
from scenarios.slots import qsa_request_slots


def _accepts(cls: type, name: str) -> bool:
    parameters = inspect.signature(cls).parameters
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _pool_class(module: Any, pool: str) -> Any:
    """The SUT's class for pool kind `pool` (pools/builtin/layouts/kinds.py class_name_of)."""
    name = class_name_of(pool)
    cls = getattr(module, name, None)
    if cls is None:
        raise TypeError(f"this SUT has no {name} (pool kind {pool})")
    return cls


def _mha_kwargs(pool_class: Any, scenario: Scenario) -> dict:
    g = scenario.geometry
    kwargs = dict(head_num=g.head_num, head_dim=g.head_dim)
    if g.v_head_dim is not None and g.v_head_dim != g.head_dim:
        if not _accepts(pool_class, "v_head_dim"):
            raise TypeError(f"this {pool_class.__name__} has no v_head_dim parameter")
        kwargs["v_head_dim"] = g.v_head_dim
    return kwargs


def _mla_kwargs(scenario: Scenario) -> dict:
    g = scenario.geometry
    return dict(kv_lora_rank=g.kv_lora_rank, qk_rope_head_dim=g.qk_rope_head_dim)


def _dsa_kwargs(scenario: Scenario) -> dict:
    """DSATokenToKVPool's keywords beside the MLA ones: the indexer's key width and the latent row
    (rank + rope, the unquantised layout)."""
    g = scenario.geometry
    return dict(index_head_dim=DSA_INDEX_HEAD_DIM, kv_cache_dim=g.kv_lora_rank + g.qk_rope_head_dim)


def _pipeline_rank(g: Any) -> dict:
    """A later pipeline rank's layers, as SGLang's model runner builds its pool ({} at layer 0)."""
    return dict(start_layer=g.start_layer, end_layer=g.layer_ids[-1]) if g.start_layer else {}


def _dcp_rank(cls: Any, g: Any) -> dict:
    """A decode-context-parallel rank's MLA pool: the SUT protocol's dcp_size and dcp_rank ({}
    on a pool of one rank, and on an MHA rank's, whose backend masks the tokens itself)."""
    if g.dcp_size == 1 or not g.kind.latent:
        return {}
    if "dcp_size" not in inspect.signature(cls).parameters:  # the limit no-mla-dcp-rank
        raise TypeError(f"this SUT's {cls.__name__} takes no dcp_size: it is no DCP rank's pool")
    return dict(dcp_size=g.dcp_size, dcp_rank=g.dcp_rank)


def _layout_pool(module: Any, scenario: Scenario, device: str) -> Any:
    g = scenario.geometry
    kind = LAYOUT_KINDS[g.pool]
    cls = _pool_class(module, g.pool)
    # FP4 pools: the geometry's dtype is the caller's; the pool's own dtype is packed e2m1.
    dtype = FP4_DTYPE if kind.fp4 else dtype_spec(g.dtype).dtype
    shape = _mla_kwargs(scenario) if kind.is_mla else _mha_kwargs(cls, scenario)
    shape.update(_pipeline_rank(g))
    return cls(
        size=g.size,
        dtype=dtype,
        layer_num=g.layer_num,
        page_size=g.page_size,
        device=device,
        enable_memory_saver=False,
        **shape,
    )


def constructor_inputs(scenario: Scenario) -> tuple:
    """What a pool's constructor reads of a scenario beyond its geometry: a QSA pool's request
    slots (its pending ring has a row per token of the largest forward). Two scenarios of one
    geometry and the same inputs build the same pool, so one may be lent to the other."""
    return (qsa_request_slots(scenario),) if scenario.geometry.kind.qsa else ()


def _hybrid_linear_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """A HybridLinearKVPool, or on a QSA kind the QSATokenToKVPool with the indexer's shape
    (scenarios/model.py QSA_*) and a ring row per token of the largest forward."""
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    qsa: dict = {}
    if g.kind.qsa:
        qsa = dict(
            qsa_index_kv_heads=QSA_INDEX_HEADS, qsa_index_head_dim=QSA_INDEX_HEAD_DIM,
            qsa_compress_ratio=QSA_COMPRESS_RATIO, qsa_token_topk=QSA_TOKEN_TOPK,
            num_request_slots=qsa_request_slots(scenario),
        )  # fmt: skip
        indexer_dtype = qsa_compressed_dtype(g)
        if _accepts(cls, "qsa_indexer_dtype"):
            qsa["qsa_indexer_dtype"] = indexer_dtype
        elif indexer_dtype != torch.bfloat16:  # the limit qsa-bf16-indexer-only
            raise TypeError(
                f"this SUT's {class_name_of(g.pool)} takes no qsa_indexer_dtype: bf16 keys only"
            )
    if g.kind.latent:  # SGLang's MLA hybrid reads head_num/head_dim only for its size accounting
        shape = dict(use_mla=True, head_num=1, head_dim=g.kv_lora_rank + g.qk_rope_head_dim)
        shape.update(_mla_kwargs(scenario))
        if g.pool in DSA_INDEX_KINDS:  # its full-attention layers are a DSATokenToKVPool's
            shape.update(use_dsa=True, **_dsa_kwargs(scenario))
    else:
        shape = dict(head_num=g.head_num, head_dim=g.head_dim)
    return cls(
        size=g.size,
        dtype=dtype,
        page_size=g.page_size,
        full_attention_layer_ids=g.full_layer_ids,
        device=device,
        mamba_pool=None,
        enable_memory_saver=False,
        **shape,
        **qsa,
    )


def _minimax_sparse_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    return cls(
        size=g.size, page_size=g.page_size, dtype=dtype, head_num=g.head_num,
        head_dim=g.head_dim, idx_head_dim=g.index_head_dim,
        dense_layer_ids=[i for i in range(g.layer_num) if i not in g.sparse_layer_ids],
        sparse_layer_ids=list(g.sparse_layer_ids),
        disable_value_sparse_layer_ids=list(g.k_only_layer_ids), device=device,
        enable_memory_saver=False, start_layer=0, end_layer=g.layer_num,
    )  # fmt: skip


def _m3_nvfp4_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """Every layer sparse with a K-only index of one 128-wide head, as MiniMax M3.1 builds it
    (its constructor refuses a dense layer or an index V)."""
    g = scenario.geometry
    layers = list(range(g.layer_num))
    return _pool_class(module, g.pool)(
        size=g.size, page_size=g.page_size, dtype=dtype, head_num=g.head_num,
        head_dim=g.head_dim, idx_head_dim=NVFP4_HEAD_DIM, dense_layer_ids=[],
        sparse_layer_ids=layers, disable_value_sparse_layer_ids=layers, device=device,
        enable_memory_saver=False, start_layer=0, end_layer=g.layer_num,
    )  # fmt: skip


def _hisparse_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    common = dict(size=g.size, page_size=g.page_size, dtype=dtype, layer_num=g.layer_num,
                  device=device, enable_memory_saver=False)  # fmt: skip
    if not g.kind.latent:
        return cls(head_num=g.head_num, head_dim=g.head_dim, **common)
    return cls(**_mla_kwargs(scenario), **_dsa_kwargs(scenario), **common)


def _page_interleave_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """The MHA or MLA constructor's keywords, and the shard this pool is: rank PAGE_SHARD_RANK of
    PAGE_SHARD_SIZE (the loader builds the release's PageShardSpec and shard group from them)."""
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    shape = _mla_kwargs(scenario) if g.kind.latent else _mha_kwargs(cls, scenario)
    if g.pool in DSA_INDEX_KINDS:
        shape.update(_dsa_kwargs(scenario))
    return cls(
        size=g.size, page_size=g.page_size, dtype=dtype, layer_num=g.layer_num, device=device,
        enable_memory_saver=False, shard_rank=PAGE_SHARD_RANK, shard_size=PAGE_SHARD_SIZE,
        **shape,
    )  # fmt: skip


def _unified_swa_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """SWAKVPool's keywords, and where the SWA sub-pool's slots sit in the shared buffer
    (pools.kinds.landing.unified_swa_base: the call sites hand it those physical ids); a fused
    draft's pool also which runner's lanes it is, behind how many target layers' rows."""
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    draft = (
        dict(host_layer_num=DRAFT_HOST_LAYERS, runner=DRAFT_RUNNER, runner_num=DRAFT_RUNNERS)
        if g.kind.unified_draft
        else {}
    )
    return cls(
        size=g.size, size_swa=g.size_swa, page_size=g.page_size, dtype=dtype,
        swa_attention_layer_ids=list(g.swa_layer_ids), full_attention_layer_ids=g.full_layer_ids,
        device=device, enable_memory_saver=False, swa_slot_base=unified_swa_base(g),
        **_mha_kwargs(cls, scenario), **draft,
    )  # fmt: skip


def _dsv4_indexer_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """One compress ratio's indexer pool as DeepSeekV4TokenToKVPool builds it (_make_indexer_pool):
    positional size, page size, dtype, key width, layers, device, memory saver; the FP8 cache
    (use_fp4_indexer given: None reads the runtime's config), no start_layer (its caller
    hands it compress layer ids from 0), and the model's logical page size: a ratio-4 indexer's
    64-token pages hold 256 tokens of the model (scenarios/model.py DSV4_LOGICAL_PAGES)."""
    g = scenario.geometry
    cls = _pool_class(module, g.pool)
    if not _accepts(cls, "global_page_size"):  # the limit dsv4-indexer-no-global-page
        raise TypeError(f"this SUT's {cls.__name__} takes no global_page_size")
    return cls(
        g.size, g.page_size, dtype, DSA_INDEX_HEAD_DIM, g.layer_num, device, False,
        use_fp4_indexer=False, global_page_size=DSV4_LOGICAL_PAGES * g.page_size,
    )  # fmt: skip


def _dsv4_pool(module: Any, scenario: Scenario, dtype: Any, device: str) -> Any:
    """DeepSeekV4SingleKVPool or DeepSeekV4UniformFP8KVPool as DeepSeekV4TokenToKVPool builds
    its full-attention pool: the pool dtype (e4m3), the latent row's NoPE and RoPE widths."""
    g = scenario.geometry
    return _pool_class(module, g.pool)(
        g.size, g.page_size, dtype, g.kv_lora_rank, g.qk_rope_head_dim, g.layer_num, device, False
    )


def build_pool(module: Any, scenario: Scenario, device: str) -> Any:
    g = scenario.geometry
    if g.pool in LAYOUT_KINDS:
        return _layout_pool(module, scenario, device)
    dtype = dtype_spec(g.dtype).dtype
    common = dict(page_size=g.page_size, device=device, enable_memory_saver=False)
    if g.kind.linear_layers:
        return _hybrid_linear_pool(module, scenario, dtype, device)
    if g.kind.sparse_index:
        return _minimax_sparse_pool(module, scenario, dtype, device)
    if g.kind.dsv4:  # before HiSparse: a V4 HiSparse pool takes the V4 constructor
        return _dsv4_pool(module, scenario, dtype, device)
    if g.kind.nvfp4_page_rows:
        return _m3_nvfp4_pool(module, scenario, dtype, device)
    if g.kind.hisparse:
        return _hisparse_pool(module, scenario, dtype, device)
    if g.kind.page_interleave:
        return _page_interleave_pool(module, scenario, dtype, device)
    if g.kind.unified_swa:
        return _unified_swa_pool(module, scenario, dtype, device)
    if not g.kind.keeps_kv:
        return _dsv4_indexer_pool(module, scenario, dtype, device)
    if g.kind.layer_split:
        return _pool_class(module, g.pool)(
            size=g.size, page_size=g.page_size, dtype=dtype, layer_num=g.layer_num,
            device=device, enable_memory_saver=False, layer_shard_rank=LAYER_SHARD_RANK,
            layer_shard_size=LAYER_SHARD_SIZE, **_mla_kwargs(scenario), **_dsa_kwargs(scenario),
        )  # fmt: skip
    # What is left: SGLang's four base pools and the SWA pool over DSA, told apart by trait, and
    # a kind declared outside this tree, built as the base pool whose traits it has.
    if not g.kind.swa:
        cls = _pool_class(module, g.pool)
        shape = _mla_kwargs(scenario) if g.kind.latent else _mha_kwargs(cls, scenario)
        shape.update(_pipeline_rank(g), **_dcp_rank(cls, g))
        return cls(size=g.size, dtype=dtype, layer_num=g.layer_num, **common, **shape)
    swa_kwargs: dict = dict(
        size=g.size,
        size_swa=g.size_swa,
        page_size=g.page_size,
        dtype=dtype,
        head_num=g.head_num,
        head_dim=g.head_dim,
        swa_attention_layer_ids=list(g.swa_layer_ids),
        full_attention_layer_ids=g.full_layer_ids,
        device=device,
    )
    if g.kind.latent:
        sub_pool = {**common, **_mla_kwargs(scenario)}
        swa_kwargs.update(
            token_to_kv_pool_class=module.MLATokenToKVPool,
            full_kv_pool_kwargs=sub_pool,
            swa_kv_pool_kwargs=dict(sub_pool),
            head_num=1,
            head_dim=g.kv_lora_rank + g.qk_rope_head_dim,
        )
        if g.kind.dsa_mla:  # kv_cache_configurator's hybrid MLA SWA pool of a DSA model
            swa_kwargs.update(
                full_kv_pool_class=module.DSATokenToKVPool,
                swa_kv_pool_class=module.MLATokenToKVPool,
                full_kv_pool_kwargs={**sub_pool, **_dsa_kwargs(scenario)},
            )
    else:
        extra = _mha_kwargs(module.MHATokenToKVPool, scenario)
        extra.pop("head_num"), extra.pop("head_dim")
        swa_kwargs.update(extra)
    return module.SWAKVPool(**swa_kwargs)
