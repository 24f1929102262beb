"""The names of SGLang that the harness relies on beyond its public write API, in one place.

A refactor of SGLang's write path keeps its public write API by definition: the pool classes and
their write doors, KVWriteLoc's constructor, ForwardBatch, RadixAttention, the backend classes
and their forward_*. Every other name is a guess about the release that its next refactor may
break (SGLang PR #40328 turns the batch's physical mark into an id space). So each such name is a
record here saying what it is and how the harness uses it, and tests/test_sglang_names.py fails
when harness code outside this module names one of the release's private names.

Two roles:
- PUBLIC: part of the write API above, or the release's own entry point to a step the harness
  must not do itself (the write-loc plan that binds a batch).
- FALLBACK: used only where a release lacks the public entry point (a release without a plan is
  marked by the field its for_batch reads, as every release before the plan was).

This module sits below harness/ so that backends/ (the call-site models and the real-code
driver) reads the same records; it holds names and the few calls that use them, no pool logic.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

Role = Literal["public", "fallback"]


@dataclass(frozen=True)
class ReleaseName:
    name: str  # as the release spells it; a member as Class.member
    kind: str  # module, class, method, field, function
    role: Role
    why: str


FORWARD_BATCH_INFO = "sglang.srt.model_executor.forward_batch_info"
KV_INDEX_TRANSLATOR = "sglang.srt.mem_cache.kv_index_translator"
# The packages of a release's write path, whose lines `kvh run --coverage` reports: pools,
# KVWriteLoc and the write-loc plan (mem_cache), the attention backends (layers.attention,
# hardware_backend), the context-parallel write (layers.utils), the MLA pool's store kernels
# (kernels.ops.kvcache, 0.5.23) and the KV cache quantizers' stores (layers.quantization).
WRITE_PATH_PACKAGES = (
    "sglang.srt.mem_cache",
    "sglang.srt.layers.attention",
    "sglang.srt.hardware_backend",
    "sglang.srt.layers.utils",
    "sglang.kernels.ops.kvcache",
    "sglang.srt.layers.quantization",
)
# Where SGLang's git checkout keeps the Python package (`sglang@git:PATH#REV` judges that folder
# of a commit, harness/sut/load/git_commits.py).
CHECKOUT_PACKAGE = "python/sglang"
# The batch's physical mark as releases 0.5.22 and 0.5.23 name it: set only on a release that
# has no plan of its own to bind the batch (mark_without_plan).
BATCH_PHYSICAL_MARK = "out_cache_loc_is_physical"

# A pool's own word that it refuses a loc no plan marked (0.5.22 on): read only where no offered
# unified pool can be run to see it refuse (harness/sut/probe/capabilities.py physical_check),
# and to decide which unified pools are offered (harness/sut/load/optional_pools.py).
PHYSICAL_CHECK_NAMES = ("requires_physical_write_loc", "_check_physical_write_loc")

# Keywords the harness gives the release's pool constructors (harness/run/pool_factory.py,
# harness/sut/load/release_constructors.py, optional_pools.py, the door probes): a pool class's
# constructor is its public API; SGLang's model runner builds every pool by keyword.
POOL_CONSTRUCTOR_KEYWORDS = (
    "size_swa", "enable_memory_saver", "index_head_dim", "kv_cache_dim", "mamba_pool", "runner",
    "use_mla", "use_dsa", "name", "grow_direction", "kv_cache_dtype", "total_bytes",
    "sub_pool_specs", "unified_buffer", "draft_region", "fused_draft", "host_allocator",
    "quant_method",
)  # fmt: skip
# Where a release keeps its KV-cache quantization methods, the function that builds one by the
# name --kv-cache-dtype gives it, and the name of a CPU server's fp8_e4m3 recipe (0.5.23's
# kv_cache_configurator asks for it on a CPU): the mha_cpu_fp8 kind's pool is built with it.
KV_CACHE_QUANT_METHODS = "sglang.srt.layers.quantization.fp4_kv_cache_quant_method"
# The MHA door's keyword for a decode-context-parallel rank's mask of the tokens it keeps
# (0.5.23; triton passes it under --dcp-size > 1).
DCP_MASK = "dcp_kv_mask"
# The runtime's parallel context (module, function: 0.5.14 on) and the fields of a
# decode-context-parallel group it holds (0.5.23): the loader pins the group off, and an MLA
# DCP rank's pool states its own with the context's scoped override (harness/sut/load/
# dcp_rank.py), in this order: whether DCP is on, the group's size, this rank.
PARALLEL_CONTEXT = ("sglang.srt.runtime_context", "get_parallel")
DCP_GROUP_FIELDS = ("dcp_enabled", "attn_dcp_size", "attn_dcp_rank")
KV_CACHE_QUANT_FACTORY = "get_kv_cache_quant_method"
# The release's own functions a rank of `kvh cp` runs its context-parallel write with
# (backends/cp_release.py; 0.5.22 on), by role: it builds its groups and CP strategy from its
# parallel config's defaults and the widths and rank it derives, and cuts a batch's full k and
# v to the rank's share with the strategy's CP_SHARD. CP_CPU_ENGINE is its switch for serving
# on a CPU (gloo collectives).
PARALLEL_STATE = "sglang.srt.distributed.parallel_state"
RUNTIME_CONTEXT = "sglang.srt.runtime_context"
CP_UTILS = "sglang.srt.layers.cp.utils"
CP_NAMES = {
    "init_distributed": (PARALLEL_STATE, "init_distributed_environment"),
    "init_model_parallel": (PARALLEL_STATE, "initialize_model_parallel"),
    "derive_widths": (RUNTIME_CONTEXT, "derive_parallel_widths"),
    "derive_ranks": (RUNTIME_CONTEXT, "derive_spawn_ranks"),
    "parallel": PARALLEL_CONTEXT,
    "config": ("sglang.srt.arg_groups.fields.parallel", "Parallel"),
    "strategy": (CP_UTILS, "get_cp_strategy"),
    "is_active": (CP_UTILS, "is_cp_active"),
    "prepare": (CP_UTILS, "prepare_cp_forward"),
}
CP_SHARD = "shard_hidden_states"
CP_CPU_ENGINE = ("SGLANG_USE_CPU_ENGINE", "1")
# What a model runner publishes around every forward (0.5.23): the backend whose pool
# get_token_to_kv_pool() answers, as the CP strategy's write asks it (module, the publishing
# function, the record, its field naming the backend).
FORWARD_CONTEXT = (
    "sglang.srt.model_executor.forward_context", "forward_context", "ForwardContext",
    "attn_backend",
)  # fmt: skip
# The batch's tokens, which is_cp_active counts: the driver gives a CP rank's batch as many.
BATCH_INPUT_IDS = "input_ids"
# A server's ForwardBatch of an extend carries its requests on the host (ForwardBatch.init_new):
# each one's new tokens (a list) and its length after them (an int64 tensor). A CP rank's
# release cuts the batch into its zigzag blocks request by request from them.
BATCH_EXTEND_LENS = "extend_seq_lens_cpu"
BATCH_SEQ_LENS = "seq_lens_cpu"
CPU_FP8_RECIPE = "cpu_fp8_e4m3"
# The release's registry of the environment switches it reads (an attribute each), asked whether a
# switch is one the release has at all; and the switches its MHA pool's layouts are built under.
ENVIRONMENT_REGISTRY = ("sglang.srt.environ", "envs")
# The head-major paged layout's switch, read once in MHATokenToKVPool's __init__.
HND_SWITCH = "SGLANG_USE_HND_KVCACHE"
AITER_LAYOUT_SWITCH = "SGLANG_AITER_KV_CACHE_LAYOUT"
# SGLANG_USE_AITER is read when memory_pool is imported, and counts only on a HIP build.
AITER_5D_SWITCHES = {"SGLANG_USE_AITER": "1", AITER_LAYOUT_SWITCH: "vectorized_5d"}
# A pool's read API, which SGLang's attention backends call: the harness reads a pool's buffers
# through it to compare their bytes (harness/run/pool_buffers.py, harness/run/execute.py,
# backends/retraction_restore.py), and sizes a unified pool's buffer by its sub-pools' entry.
POOL_READ_API = (
    "main_pool", "index_k_pool", "index_k_layer_id_mapping", "index_k_with_scale_buffer",
    "get_index_k_buffer", "get_index_kv_buffer", "get_index_k_with_scale_buffer",
    "entry_bytes",  # a sub-pool spec's; public for the campaign too (mutants/release_renames.py)
)  # fmt: skip
# What the real-code driver gives a release backend's batch and runner beyond the scenario's data
# (backends/real_code.py): the request-to-token pool a ForwardBatch and a model runner hold (the
# attention math reads it, the write does not), and the attention output buffer a release reads
# with getattr(batch, ABSENT_ATTENTION_OUTPUT, None), absent on a batch the harness drives.
REQ_TO_TOKEN_POOL = "req_to_token_pool"
REQ_TO_TOKEN = "req_to_token"
ABSENT_ATTENTION_OUTPUT = "_attn_output"
# The unwrap helper's name since 0.5.14: looked up first, then found by what it does
# (harness/sut/probe/unwrap_helper.py).
UNWRAP_HELPER = "unwrap_write_loc"

# The harness modules that build, call or read the release's own objects. In them, every name
# that is also a private name of the release's write path (mutants/release_renames.py) is one
# this module declares, or one of NOT_RELEASE_NAMES (tests/test_sglang_names.py).
RELEASE_FACING = (
    "harness/sut/load/sglang_loader.py", "harness/sut/load/release_constructors.py",
    "harness/sut/load/optional_pools.py", "harness/sut/load/optional_pool_records.py",
    "harness/sut/probe/door_behaviour.py",
    "harness/sut/probe/capabilities.py", "harness/sut/probe/source_capabilities.py",
    "harness/sut/probe/unwrap_helper.py", "harness/run/pool_factory.py",
    "harness/run/pool_buffers.py", "harness/run/execute.py", "backends/real_code.py",
    "backends/release_batch.py", "backends/retraction_restore.py", "backends/context.py",
    "backends/cp_release.py",
)  # fmt: skip
# Spellings those modules use for what is not the release's, which a release also defines.
NOT_RELEASE_NAMES = {
    "shape": "torch.Tensor.shape",
    "is_mla": "the harness's own WriteRequest.is_mla",
}

NAMES: tuple[ReleaseName, ...] = (
    ReleaseName(FORWARD_BATCH_INFO, "module", "public", "ForwardBatch and ForwardMode live here"),
    ReleaseName("ForwardBatch", "class", "public", "each write's batch is built as the release's"),
    ReleaseName("ForwardMode", "class", "public", "the batch's mode for a real backend's forward"),
    ReleaseName(
        KV_INDEX_TRANSLATOR,
        "module",
        "public",
        "the write-loc plan a batch is bound by (0.5.22 on)",
    ),
    ReleaseName(
        "KVIndexTranslator",
        "class",
        "public",
        "a runner's translator: its constructor's keywords (req_to_token, token_to_kv_pool_"
        "allocator, token_to_kv_pool, page_size, device) are scenario data",
    ),
    ReleaseName(
        "KVIndexTranslator.bind_own_plan",
        "method",
        "public",
        "binds a batch built outside ForwardBatch.init_new to a plan of its own fields: the "
        "release's code sets the write ids and the physical mark, whatever it calls them",
    ),
    ReleaseName(
        f"ForwardBatch.{BATCH_PHYSICAL_MARK}",
        "field",
        "fallback",
        "the mark a release without a plan reads in KVWriteLoc.for_batch (user pool files that "
        "mimic 0.5.22 and 0.5.23)",
    ),
    ReleaseName(
        "DSATokenToKVPool", "class", "public", "a pool class; its presence decides swa_dsa"
    ),
    ReleaseName(
        "HiSparseDSATokenToKVPool",
        "class",
        "public",
        "a pool class, offered and probed by running its doors",
    ),
    ReleaseName(
        "MHATokenToKVPool.get_kv_cache_quant_method",
        "method",
        "public",
        "what a backend's __init__ asks its pool (0.5.23): the driver asks it the same way",
    ),
    ReleaseName(
        "sglang.srt.runtime_context.get_parallel",
        "function",
        "fallback",
        "0.5.23's MLA write reads the DCP topology no server published here: pinned off",
    ),
    ReleaseName(
        "get_parallel().override_permanently",
        "method",
        "fallback",
        "the pin itself (harness/sut/load/dcp_rank.py pin_dcp_off)",
    ),
    ReleaseName(
        "get_parallel().override",
        "method",
        "public",
        "the context's scoped override, which its refusals name as the way to state a width: an "
        "MLA DCP rank's pool states its group with it around each door (harness/sut/load/"
        "dcp_rank.py)",
    ),
    *(
        ReleaseName(
            f"get_parallel().{name}",
            "field",
            "public",
            "a decode-context-parallel group's field, pinned off at load and stated per rank",
        )
        for name in DCP_GROUP_FIELDS
    ),
    *(
        ReleaseName(
            f"MHATokenToKVPool.{name}",
            "field",
            "fallback",
            "a pool's word that it refuses an unmarked loc, read only where no unified pool runs",
        )
        for name in PHYSICAL_CHECK_NAMES
    ),
    *(
        ReleaseName(name, "keyword", "public", "a pool constructor's keyword")
        for name in POOL_CONSTRUCTOR_KEYWORDS
    ),
    *(ReleaseName(name, "method", "public", "a pool's read API") for name in POOL_READ_API),
    ReleaseName(
        f"ForwardBatch.{REQ_TO_TOKEN_POOL}",
        "field",
        "public",
        "a batch's and a runner's request-to-token pool, given empty: only attention reads it",
    ),
    ReleaseName(
        f"ReqToTokenPool.{REQ_TO_TOKEN}", "field", "public", "that pool's table, given as None"
    ),
    ReleaseName(KV_CACHE_QUANT_METHODS, "module", "public", "the KV-cache quantization methods"),
    ReleaseName(
        DCP_MASK,
        "keyword",
        "public",
        "MHATokenToKVPool.set_kv_buffer's DCP rank mask: triton_dcp passes it; the capability "
        "dcp_mask_door is whether the door takes it",
    ),
    *(
        ReleaseName(
            f"{module}.{name}",
            "function",
            "public",
            f"the release's own step ({role}) of a kvh cp rank's context-parallel write",
        )
        for role, (module, name) in CP_NAMES.items()
    ),
    ReleaseName(
        f"ContextParallelStrategy.{CP_SHARD}",
        "method",
        "public",
        "cuts a batch's rows to this rank's share, as the model's layers do before attention",
    ),
    ReleaseName(
        CP_CPU_ENGINE[0], "environment", "public", "the release's switch for serving on a CPU"
    ),
    ReleaseName(
        ".".join(ENVIRONMENT_REGISTRY),
        "field",
        "public",
        "the registry of a release's environment switches: whether it has the 5-D layout's",
    ),
    *(
        ReleaseName(
            switch, "environment", "public", "a switch the MHA pool's layout is built under"
        )
        for switch in (HND_SWITCH, *AITER_5D_SWITCHES)
    ),
    ReleaseName(
        ".".join(FORWARD_CONTEXT[:2]),
        "function",
        "public",
        "the forward context a model runner publishes around each forward",
    ),
    ReleaseName(
        f"ForwardContext.{FORWARD_CONTEXT[3]}",
        "field",
        "public",
        "the backend a forward context names, whose pool get_token_to_kv_pool() answers",
    ),
    ReleaseName(
        f"ForwardBatch.{BATCH_INPUT_IDS}",
        "field",
        "public",
        "the batch's tokens, given as zeros on a CP rank's batch: is_cp_active counts them",
    ),
    ReleaseName(
        f"ForwardBatch.{BATCH_EXTEND_LENS}",
        "field",
        "public",
        "each request's new tokens, given on a CP rank's extend: prepare_cp_forward splits by it",
    ),
    ReleaseName(
        f"ForwardBatch.{BATCH_SEQ_LENS}",
        "field",
        "public",
        "each request's length after the extend, given on a CP rank's extend with the above",
    ),
    ReleaseName(
        KV_CACHE_QUANT_FACTORY,
        "function",
        "public",
        f"builds the method --kv-cache-dtype names ({CPU_FP8_RECIPE} for mha_cpu_fp8)",
    ),
    ReleaseName(
        "ForwardBatch.positions",
        "field",
        "public",
        "each token's position in its request (Forward.positions): triton masks a DCP rank's "
        "write by it",
    ),
    ReleaseName(
        f"ForwardBatch.{ABSENT_ATTENTION_OUTPUT}",
        "field",
        "fallback",
        "the attention output buffer 0.5.23 reads with a getattr default: given as None",
    ),
    ReleaseName(
        UNWRAP_HELPER,
        "function",
        "fallback",
        "the unwrap helper's name, looked up before the helper is found by what it does",
    ),
)


def declares(attribute: str) -> bool:
    """Whether a record names `attribute` (a member's last part: `req_to_token_pool` for
    ForwardBatch.req_to_token_pool)."""
    return any(record.name.rsplit(".", 1)[-1] == attribute for record in NAMES)


def named(name: str) -> ReleaseName:
    for record in NAMES:
        if record.name == name:
            return record
    raise KeyError(f"{name} is not a release name the harness declares (backends/sglang_names.py)")


def release_plan_binder() -> Optional[Callable[[Any, Any], None]]:
    """The release's own way to bind a batch to a plan of its fields, as `bind(batch, pool)`, or
    None where the loaded sglang has no plan (releases before 0.5.22, or one whose translator
    does not import here). The runner's translator is built over the pool the write goes to with
    no translating allocator: the scenario's locs are the pool's own ids, as a plain runner's are,
    and the plan then marks them as its code marks such ids."""
    try:
        translator = getattr(importlib.import_module(KV_INDEX_TRANSLATOR), "KVIndexTranslator")
    except Exception:  # noqa: BLE001 - no plan in this release, or one that needs a GPU to import
        return None
    if not callable(getattr(translator, "bind_own_plan", None)):
        return None

    def bind(batch: Any, pool: Any) -> None:
        import torch

        loc = batch.out_cache_loc
        runner = translator(
            req_to_token=torch.zeros((1, 1), dtype=torch.int32, device=loc.device),
            token_to_kv_pool_allocator=None,
            token_to_kv_pool=pool,
            # Read only for a graph's capture capacity and an NPU's DCP split; binding reads none.
            page_size=1,
            device=str(loc.device),
        )
        runner.bind_own_plan(batch)

    return bind


def mark_without_plan(batch: Any, physical: bool) -> None:
    """A release without a plan (or a user's pool file) reads the mark its for_batch names."""
    setattr(batch, BATCH_PHYSICAL_MARK, physical)
