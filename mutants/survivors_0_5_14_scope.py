"""The survivors of 0.5.14's whole-scope campaign beyond its write doors (the doors' records:
mutants/survivors_0_5_14.py; the MLA scatter's: survivors_0_5_14_mla.py), each read against the
release: the attention backends' forwards before their write, the MHA store's branches, the
forward mode, the out-of-bounds probe. Line numbers are 0.5.14's;
where a reason is 0.5.23's too, its text says so."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    ATTENTION_TYPE_IDENTITY,
    EQ_ORDERED,
    EQUIVALENT,
    GAP,
    IDENTITY,
    MUL_REPLACED,
    NOT_EQ_ORDERED,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)
from mutants.survivors_0_5_14 import RELEASE

_FA3 = "srt/layers/attention/flashattention_backend.py:core/"
_MODE = "srt/model_executor/forward_batch_info.py:core/"
_FLASHINFER = "srt/layers/attention/flashinfer_backend.py:core/"
_PROBE = "srt/utils/async_probe.py:core/"
_M = "srt/mem_cache/memory_pool.py:core/"
_MLA_K = "srt/mem_cache/triton_ops/mla_buffer.py:core/"
_COMMON = "srt/utils/common.py:core/"
_TORCH_NATIVE = "srt/layers/attention/torch_native_backend.py:core/"
_TRITON = "srt/layers/attention/triton_backend.py:core/"

CP_WRITE_0_5_14 = (
    "the context-parallel write of 0.5.14 (FA3's is_cp_mode, 786-790, and its branch, 812-835: "
    "the CP strategy's materialize_full_kv or cp_allgather_and_save_kv_cache): kvh's cp cells "
    "join a release's CP group with its own parallel derivations (backends/cp_release.py), which "
    "0.5.14 lacks (no derive_parallel_widths), so on 0.5.14 they run the model and no batch kvh "
    "hands carries CP metadata; `self.attn_cp_size > 1` is read only after that metadata's test"
)
READ_BACK_0_5_14 = (
    "a forward called with k and v None, which reads the layer's rows back from the cache (the "
    "IQuestLoopCoder path) before the write at its end, or with one of them None, which triton "
    "refuses (1046); kvh's scenarios always hand k and v"
)
ENCODER_ONLY_0_5_14 = (
    "the test that skips the write for an encoder-only layer of a model that is not a diffusion "
    "LM: kvh's layers have no attention type, so both sides of the mutated `not` agree"
)
_SAVE_DEFAULT = (
    "the default of a forward's save_kv_cache parameter: every caller of an attention backend's "
    "forward_extend or forward_decode in the release passes it (AttentionBackend.forward, "
    "base_attn_backend.py 159-201; the hybrid and hybrid-linear backends hand on their caller's), "
    "so the default is never read"
)
_ROW_BYTES = (
    "_set_kv_buffer_impl's row_bytes (memory_pool.py 132), read only by its CUDA/HIP branch "
    "(133-142: `(_is_cuda or _is_hip) and ... can_use_store_cache(row_bytes)` and store_cache's "
    "row_bytes); a CPU's test is False at its first operand, and the CPU paths never read it"
)
_JIT_STORE = (
    "the CUDA store_cache test `(_is_cuda or _is_hip) and same_kv_dim and "
    "can_use_store_cache(row_bytes)` (memory_pool.py 133) with its flags negated, joined by "
    "`and`, or its `and`s turned `or`: on a CPU both flags are False, and can_use_store_cache, "
    "where it is called, tries to build the CUDA JIT kernel, fails and returns False "
    "(jit_kernel/kvcache.py 32-47), so the indexed assignment runs as before; on a CUDA "
    "machine the mutants would skip store_cache (`_is_cuda and _is_hip` is never True)"
)
_CPU_ENGINE_FLAGS = (
    "the AMX store's test `_is_cpu and _cpu_has_amx_support` (memory_pool.py 144) with `_is_cpu` "
    "negated or joined by `or`: `_is_cpu` is SGLang's CPU-engine switch (SGLANG_USE_CPU_ENGINE), "
    "which kvh leaves unset, and this CPU has no AMX, so both tests are False; a CPU engine on "
    "an AMX machine would take torch.ops.sgl_kernel.store_cache_cpu"
)
_ALT_STREAM = (
    "the CUDA graph capture's alternate stream (memory_pool.py 156-162): a CPU pool has no "
    "alt_stream and no capture runs, so every form of the test is False and the naive "
    "assignment runs; only a CUDA pool capturing a graph takes the other branch"
)
_SAME_KV_DEFAULT = (
    "same_kv_dim's default: _set_kv_buffer_impl's only caller (the MHA door, memory_pool.py "
    "1455-1469) passes it"
)
_OUTPUT_BUFFER = (
    "torch_native's output buffer o (its width and the test that picks it, "
    "torch_native_backend.py 288-291 and 351-354) and the query it reshapes in decode (349): "
    "only the attention after the write reads them "
    "(where the reshape does not raise); the write reads k, v and the loc"
)
_TRITON_OUTPUT = (
    "triton's output buffer o (triton_backend.py 1030-1036: the batch's _attn_output, which kvh "
    "hands as None, or a new one of a width the test picks; 1337-1340 in decode) and the width "
    "its forward_decode reshapes the query to (1334): where they do not raise, only the "
    "attention after the write reads them; the write reads k, v and the loc"
)
_CAPPING_METHOD = (
    "a logit capping method other than tanh, which logit_capping_mod refuses (triton_backend.py "
    "62-67): kvh's layers pass RadixAttention's default, tanh, for which `==`, `<=`, `>=` and "
    "`is` (an interned literal) agree"
)
_SWA_LAYERS = (
    "torch_native's `swa_layer_nums > 0` in its test for a sliding-window pool "
    "(torch_native_backend.py 30): `!= 0` agrees, a count is never negative"
)
_SWA_NO_LAYER = (
    "torch_native's `swa_layer_nums > 0` as `>= 0` or `> -1` (torch_native_backend.py 30): they "
    "differ only for an SWAKVPool with no SWA layer, which kvh never builds"
)
_DEAD_CACHE_LOC = (
    "torch_native's first choice of cache_loc in forward_decode (355-359): the `if` at 361-364 "
    "assigns it again before anything reads it"
)
_DEBUG_DECORATOR = (
    "@debug_kernel_api removed: at the release's default kernel API log level (0) the decorator "
    "returns the function itself (kernel_api_logging.py 407-411)"
)
_RAGGED_ATTENTION = (
    "the ragged prefill's attention: its causal flag (flashinfer_backend.py 1022-1027) and the "
    "choice between the no-prefix ragged wrapper and the ragged-plus-paged merge (1031) decide "
    "only the attention output o; the write at 1073-1081 reads k, v and the loc, not them"
)
_WRAPPER_INDEX = (
    "which prefill or decode wrapper a layer's attention runs with (`num_wrappers` is 1 or 2): "
    "the wrapper computes the attention output only; the write does not use it"
)
_OOB_PROBE_ON = (
    "the out-of-bounds probe turned on (async_probe.py 105): it asserts every loc lies in "
    "[0, size + page_size), which each loc kvh hands the doors does; a negative loc, which "
    "torch's indexing wraps where the probe would raise, is not among kvh's release scenarios "
    "(as on 0.5.23)"
)

SURVIVORS_0_5_14_SCOPE: tuple[Survivor, ...] = (
    alike(RELEASE, GAP, CP_WRITE_0_5_14, tuple(
        (f"{_FA3}ReplaceComparisonOperator_Gt_{name}:9", f"and self.attn_cp_size {symbol} 1")
        for name, symbol in (("Eq", "=="), ("NotEq", "!="), ("Lt", "<"), ("LtE", "<="), ("GtE", ">="))
    ) + (
        (_FA3 + "NumberReplacer:224", "and self.attn_cp_size > 2"),
        (_FA3 + "NumberReplacer:225", "and self.attn_cp_size > 0"),
    ))
    + alike(RELEASE, GAP, CP_WRITE_0_5_14, tuple(
        # Its readers in the universe are FA3's forward_extend (787, is_cp_mode, and 951, after
        # the write), each beside the batch's CP metadata, None on every batch kvh hands 0.5.14.
        (f"{_MODE}ReplaceComparisonOperator_Eq_{name}:{occurrence}", f"{prefix}self {symbol} ForwardMode.{mode}")
        for occurrence, prefix, mode in ((6, "", "EXTEND"), (7, "or ", "MIXED"), (8, "", "DRAFT_EXTEND_V2"))
        for name, symbol in EQ_ORDERED + IDENTITY
    ) + (
        (_MODE + "AddNot:1", "if not include_draft_extend_v2"),
        (_MODE + "ReplaceFalseWithTrue:3", "def is_context_parallel_extend(self, include_draft_extend_v2: bool = True):"),
        (_MODE + "ReplaceFalseWithTrue:4", "else True"),
        (_MODE + "ReplaceOrWithAnd:5", "and self == ForwardMode.MIXED"),
        (_MODE + "ReplaceOrWithAnd:6", "and ("),
    ))
    + alike(RELEASE, OUT_OF_REACH, _ROW_BYTES, tuple(
        (f"{_M}ReplaceBinaryOperator_Mul_{name}:3", f"row_bytes = row_dim {symbol} store_dtype.itemsize")
        for name, symbol in MUL_REPLACED
    ))
    + alike(RELEASE, OUT_OF_REACH, _JIT_STORE, (
        (_M + "AddNot:2", "if not (_is_cuda or _is_hip) and same_kv_dim and can_use_store_cache(row_bytes):"),
        (_M + "ReplaceAndWithOr:3", "if (_is_cuda or _is_hip) or same_kv_dim and can_use_store_cache(row_bytes):"),
        (_M + "ReplaceAndWithOr:4", "if (_is_cuda or _is_hip) and same_kv_dim or can_use_store_cache(row_bytes):"),
        (_M + "ReplaceOrWithAnd:1", "if (_is_cuda and _is_hip) and same_kv_dim and can_use_store_cache(row_bytes):"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _CPU_ENGINE_FLAGS, (
        (_M + "AddNot:3", "if not _is_cpu and _cpu_has_amx_support:"),
        (_M + "ReplaceAndWithOr:5", "if _is_cpu or _cpu_has_amx_support:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _ALT_STREAM, (
        (_M + "ReplaceComparisonOperator_IsNot_Is:0", "if get_is_capture_mode() and alt_stream is None:"),
        (_M + "AddNot:4", "if not get_is_capture_mode() and alt_stream is not None:"),
        (_M + "ReplaceAndWithOr:6", "if get_is_capture_mode() or alt_stream is not None:"),
    ))
    + alike(RELEASE, EQUIVALENT, _SAME_KV_DEFAULT, (
        (_M + "ReplaceTrueWithFalse:0", "same_kv_dim: bool = False,"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _OUTPUT_BUFFER, tuple(
        (f"{_TORCH_NATIVE}ReplaceBinaryOperator_Mul_{name}:{occurrence}", f"o = q.new_empty((q.shape[0], layer.tp_q_head_num {symbol} layer.v_head_dim))")
        for occurrence in (1, 3)
        for name, symbol in MUL_REPLACED
    ) + tuple(
        (f"{_TORCH_NATIVE}ReplaceComparisonOperator_NotEq_{name}:{occurrence}", f"if layer.qk_head_dim {symbol} layer.v_head_dim:")
        for occurrence in (0, 2)
        for name, symbol in NOT_EQ_ORDERED + IDENTITY
    ) + (
        (_TORCH_NATIVE + "AddNot:12", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "AddNot:17", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "NumberReplacer:94", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:95", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:104", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:105", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
    ) + tuple(
        (f"{_TORCH_NATIVE}ReplaceBinaryOperator_Mul_{name}:2", f"q = q.reshape(-1, layer.tp_q_head_num {symbol} layer.qk_head_dim)")
        for name, symbol in MUL_REPLACED
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _TRITON_OUTPUT, tuple(
        (f"{_TRITON}ReplaceBinaryOperator_Mul_{name}:{occurrence}", f"o = q.new_empty((q.shape[0], layer.tp_q_head_num {symbol} layer.v_head_dim))")
        for occurrence in (12, 14)
        for name, symbol in MUL_REPLACED
    ) + tuple(
        (f"{_TRITON}ReplaceComparisonOperator_NotEq_{name}:{occurrence}", f"{prefix} layer.qk_head_dim {symbol} layer.v_head_dim:")
        for occurrence, prefix in ((1, "elif"), (2, "if"))
        for name, symbol in NOT_EQ_ORDERED + IDENTITY
    ) + tuple(
        (f"{_TRITON}ReplaceBinaryOperator_Mul_{name}:13", f"q = q.reshape(-1, layer.tp_q_head_num {symbol} layer.qk_head_dim)")
        for name, symbol in MUL_REPLACED
    ) + (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:28", "if attn_out is None:"),
        (_TRITON + "AddNot:61", "if not attn_out is not None:"),
    ) + tuple(
        (f"{_TRITON}NumberReplacer:{occurrence}", f"o = q.new_empty((q.shape[ {index}], layer.tp_q_head_num * layer.v_head_dim))")
        for occurrence, index in ((148, "1"), (149, "-1"), (196, "1"), (197, "-1"))
    ) + (
        (_TRITON + "AddNot:79", "if not layer.qk_head_dim != layer.v_head_dim:"),
    ))
    + alike(RELEASE, GAP, READ_BACK_0_5_14, (
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:12", "if k is not None and v is None:"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:13", "if k is None and v is not None:"),
        (_TRITON + "AddNot:62", "if not k is None and v is None:"),
        (_TRITON + "ReplaceAndWithOr:20", "if k is None or v is None:"),
        (_TRITON + "ReplaceOrWithAnd:6", "elif k is None and v is None:"),
    ))
    + alike(RELEASE, GAP, _CAPPING_METHOD, (
        (_TRITON + "ReplaceComparisonOperator_Eq_LtE:0", 'if logit_capping_method <= "tanh":'),
        (_TRITON + "ReplaceComparisonOperator_Eq_GtE:0", 'if logit_capping_method >= "tanh":'),
        (_TRITON + "ReplaceComparisonOperator_Eq_Is:0", 'if logit_capping_method is "tanh":'),
    ))
    + alike(RELEASE, EQUIVALENT, _SWA_LAYERS, (
        (_TORCH_NATIVE + "ReplaceComparisonOperator_Gt_NotEq:0", "and self.token_to_kv_pool.swa_layer_nums != 0"),
    ))
    + alike(RELEASE, GAP, _SWA_NO_LAYER, (
        (_TORCH_NATIVE + "ReplaceComparisonOperator_Gt_GtE:0", "and self.token_to_kv_pool.swa_layer_nums >= 0"),
        (_TORCH_NATIVE + "NumberReplacer:1", "and self.token_to_kv_pool.swa_layer_nums > -1"),
    ))
    + alike(RELEASE, EQUIVALENT, _DEAD_CACHE_LOC, (
        (_TORCH_NATIVE + "ReplaceUnaryOperator_Delete_Not:3", "if  layer.is_cross_attention"),
        (_TORCH_NATIVE + "AddNot:18", "if not not layer.is_cross_attention"),
    ))
    + alike(RELEASE, EQUIVALENT, _DEBUG_DECORATOR, (
        (_FLASHINFER + "RemoveDecorator:4", ""),
        (_FLASHINFER + "RemoveDecorator:5", ""),
    ))
    + alike(RELEASE, EQUIVALENT, _SAVE_DEFAULT, (
        (_FA3 + "ReplaceTrueWithFalse:2", "save_kv_cache=False,"),
        (_FA3 + "ReplaceTrueWithFalse:8", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:8", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:10", "save_kv_cache=False,"),
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:0", "save_kv_cache=False,"),
        (_TRITON + "ReplaceTrueWithFalse:0", "save_kv_cache=False,"),
        (_TRITON + "ReplaceTrueWithFalse:2", "save_kv_cache=False,"),
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:2", "save_kv_cache=False,"),
    ))
    + alike(RELEASE, GAP, READ_BACK_0_5_14, (
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:9", "if k is not None and v is None:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:10", "if k is None and v is not None:"),
        (_FLASHINFER + "AddNot:73", "if not k is None and v is None:"),
        (_FLASHINFER + "ReplaceAndWithOr:14", "if k is None or v is None:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _RAGGED_ATTENTION, (
        (_FLASHINFER + "AddNot:74", "if not ("),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_NotEq:7", "or layer.attn_type != AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_IsNot:4", "or layer.attn_type is not AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceOrWithAnd:10", "and layer.attn_type == AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceTrueWithFalse:9", "causal = False"),
        (_FLASHINFER + "ReplaceFalseWithTrue:19", "causal = True"),
        (_FLASHINFER + "AddNot:76", "if not self.forward_metadata.extend_no_prefix:"),
    ))
    + alike(RELEASE, EQUIVALENT, ATTENTION_TYPE_IDENTITY, (
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_Is:4", "or layer.attn_type is AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_Is:5", "if not self.is_dllm_model and layer.attn_type is AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, GAP, ENCODER_ONLY_0_5_14, (
        (_FLASHINFER + "ReplaceUnaryOperator_Delete_Not:19", "if  self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
        (_FLASHINFER + "AddNot:75", "if not not self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _WRAPPER_INDEX, (
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_LtE:9", "if self.num_wrappers <= 1:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_GtE:9", "if self.num_wrappers >= 1:"),
        (_FLASHINFER + "NumberReplacer:140", "return 1"),
        (_FLASHINFER + "NumberReplacer:141", "return -1"),
    ))
    + alike(RELEASE, GAP, _OOB_PROBE_ON, (
        (_PROBE + "ReplaceUnaryOperator_Delete_Not:4", "if  envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
        (_PROBE + "AddNot:10", "if not not envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
    ))
)  # fmt: skip
