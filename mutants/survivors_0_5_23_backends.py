"""The full campaign over 0.5.23's whole scope (docs/mutation/sglang-0.5.23-scope.json): the
records of the mutants it judged that survived in the attention backends, from a forward's
entry to its write door, each read against the release (the pools' are in
mutants/survivors_0_5_23_full.py). Line numbers are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    ATTENTION_TYPE_IDENTITY,
    EQ_ORDERED,
    EQUIVALENT,
    GAP,
    IDENTITY,
    LTE_ORDERED,
    MUL_INT_REPLACED,
    NOT_EQ_ORDERED,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
    each_replacement,
)
from mutants.survivors_0_5_23_full import RELEASE
from mutants.survivors_0_5_23_scope import ATTENTION_OUTPUT, DENSE_FP8_PREFILL, DRAFT_SWA_ASSERT

_FA3 = "srt/layers/attention/flashattention_backend.py:core/"
_TRITON = "srt/layers/attention/triton_backend.py:core/"
_FLASHINFER = "srt/layers/attention/flashinfer_backend.py:core/"
_TORCH_NATIVE = "srt/layers/attention/torch_native_backend.py:core/"
_FLASHINFER_MLA = "srt/layers/attention/flashinfer_mla_backend.py:core/"
K_READ_BACK = (
    "a forward called with k and v None, which reads the layer's rows back from the cache "
    "(the IQuestLoopCoder path) before the write at its end; kvh's scenarios always hand k and v"
)
_SAVE_DEFAULT = (
    "the default of a forward's save_kv_cache parameter: every caller of an attention backend's "
    "forward_extend or forward_decode in the release passes it (AttentionBackend.forward, "
    "base_attn_backend.py 328-361; tbo_backend.py hands on its caller's arguments), so the "
    "default is never read"
)
_DEBUG_DECORATOR = (
    "@debug_kernel_api removed: at the release's default kernel API log level (0) the decorator "
    "returns the function itself (kernels/kernel_api_logging.py 408-411)"
)
_SCORE_MOD = (
    "the refusal of a score_mod on an FA implementation other than 4: the mutated operand is read "
    "only when a score_mod is given, and kvh hands the forward none, so a forward that writes "
    "where the release refuses (or refuses where it writes) goes unseen"
)
_SAVE_FALSE = (
    "`and` to `or` in the forward's decision to write: kvh called every forward with "
    "save_kv_cache=True (and k given), where both agree; a forward told not to save (a layer "
    "whose K/V another layer wrote) was not driven"
)
_SAVE_FALSE_CLOSED = (
    "session 19: the unsaved-layer, unsaved-layer-decode and dcp-rank-unsaved scenarios "
    "(Forward.unsaved_layers), whose last layer each backend's release forward is called with "
    "save_kv_cache=False (backends/real_code.py), its rows held at the canary by the untouched "
    "oracle"
)
_SAVE_FALSE_MLA = (
    "`and` to `or` in flashinfer_mla's test before its write (721), whose body tests "
    "save_kv_cache again before each door: told not to save with k given, the mutant only runs "
    "`assert v is not None`, which a forward's v (k_nope in every MLA model's call) passes; kvh's "
    "dcp-rank-unsaved scenario calls it so and sees no write, as the release makes none. Only a "
    "v of None would raise, which no caller hands with k"
)
_RAGGED_ATTENTION = (
    "the ragged prefill's attention: causal and the choice between the no-prefix ragged wrapper "
    "and the ragged-plus-paged merge decide only the attention output o; the write at 1505-1516 "
    "reads k, v and the loc, not them"
)
_ENCODER_ONLY = (
    "the test that skips the write for an encoder-only layer of a model that is not a diffusion "
    "LM: kvh's layers have no attention type, so both sides of the mutated `not` agree"
)
_WRAPPER_INDEX = (
    "which prefill or decode wrapper a layer's attention runs with: the wrapper computes the "
    "attention output only; the write does not use it"
)
_DECODE_QUERY = (
    "the width torch_native's forward_decode reshapes its query to (torch_native_backend.py "
    "349): where the reshape does not raise, only the attention math and the output buffer's "
    "row count read the query; the write reads k, v and the loc"
)
_DEAD_CACHE_LOC = (
    "torch_native's first choice of cache_loc in forward_decode (354-358): the `if` at 360-363 "
    "assigns it again before anything reads it"
)
_SWA_LAYER_COUNT = (
    "torch_native's `swa_layer_nums > 0` in its test for a sliding-window pool: `!= 0` agrees "
    "(a count is never negative); `>= 0` and `> -1` differ only for an SWAKVPool with no SWA "
    "layer, which kvh never builds (every hybrid layer pattern has one of each)"
)
_TRITON_OUTPUT = (
    "triton's output buffer o (triton_backend.py 1692-1698: the batch's _attn_output, which kvh "
    "hands as None, or a new one; 2305-2309) and the width its "
    "forward_decode reshapes the query to (2302): where they do not raise, only the attention "
    "math after the write reads them; the write reads k, v and the loc"
)
_CAPPING_METHOD = (
    "a logit capping method other than tanh, which logit_capping_mod refuses "
    "(triton_backend.py 110-115): kvh's layers pass RadixAttention's default, tanh, for which "
    "`==`, `<=`, `>=` and `is` (an interned literal) agree"
)
_SHORT_POSITIONS = (
    "a DCP rank's positions of another length than its loc, where triton's _set_kv_buffer "
    "falls back to the batch's dcp_kv_mask (triton_backend.py 1651-1656): kvh's DCP scenarios "
    "hand one position per loc token, where `==`, `<=` and `>=` agree"
)
_COUNT_IDENTITY = (
    "`==` to `is` between a DCP rank's position count and its loc's: CPython keeps one object "
    "per int only from -5 to 256, so the two differ for a forward of more than 256 tokens on a "
    "DCP rank, which no check of kvh's triton_dcp cells writes"
)
_O_WIDTH = "o = q.new_empty((q.shape[0], layer.tp_q_head_num * layer.v_head_dim))"
_Q_WIDTH = "q = q.reshape(-1, layer.tp_q_head_num * layer.qk_head_dim)"
_DCP_SIZE = (
    "`> 1` to `!= 1` on triton's DCP group size (1645): a group's size is at least 1 "
    "(get_parallel().attn_dcp_size, or 1 on a draft runner, 259-264), where the two agree"
)
_DENSE_FP8_GATE = (
    "an operand of forward_extend's test for the dense FP8 prefill (1681-1687) negated: the "
    "test's last operand, _can_run_dense_fp8_chunked_mha, is False here (its first operand needs "
    "a ROCm gfx95 GPU, 273-283), so a negated operand can only end the `and` chain sooner with "
    "the same False; on a gfx95 GPU the mutants would send a prefill past (or into) that path"
)
_DENSE_FP8_OR = (
    "`and` to `or` inside the dense FP8 prefill test (1508-1519): its first operand needs a ROCm "
    "gfx95 GPU and is False here, so the test becomes the operands after the `or`, which hold "
    "only for an fp8 prefill over a cached prefix of 12 query and key heads, 192 wide for QK and "
    "128 for V; no check writes that shape, and where one did the mutant would send it to the "
    "gfx95 kernel path, which a CPU cannot run (a harness-caused skip, never a verdict)"
)
_WINDOW = "and (layer.sliding_window_size is None or layer.sliding_window_size "
_MUL = ("ReplaceBinaryOperator_Mul", "*")
_LTE = ("ReplaceComparisonOperator_LtE", "<=")
_EQ = ("ReplaceComparisonOperator_Eq", "==")
_NOT_EQ = ("ReplaceComparisonOperator_NotEq", "!=")
_HEAD_DIMS = "if layer.qk_head_dim != layer.v_head_dim:"
SURVIVORS_0_5_23_BACKENDS: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, _SAVE_DEFAULT, (
        (_FA3 + "ReplaceTrueWithFalse:7", "save_kv_cache=False,"),
        (_FA3 + "ReplaceTrueWithFalse:13", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:12", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:14", "save_kv_cache=False,"),
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:0", "save_kv_cache=False,"),
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:2", "save_kv_cache=False,"),
        (_TRITON + "ReplaceTrueWithFalse:11", "save_kv_cache=False,"),
        (_TRITON + "ReplaceTrueWithFalse:16", "save_kv_cache=False,"),
        (_FLASHINFER_MLA + "ReplaceTrueWithFalse:12", "save_kv_cache: bool = False,"),
        (_FLASHINFER_MLA + "ReplaceTrueWithFalse:14", "save_kv_cache: bool = False,"),
    ))
    + alike(RELEASE, EQUIVALENT, _DEBUG_DECORATOR, (
        (_FLASHINFER + "RemoveDecorator:5", ""),
        (_FLASHINFER + "RemoveDecorator:6", ""),
    ))
    + alike(RELEASE, EQUIVALENT, ATTENTION_TYPE_IDENTITY, (
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_Is:14", "if not self.is_dllm_model and layer.attn_type is AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _RAGGED_ATTENTION, (
        (_FLASHINFER + "ReplaceTrueWithFalse:13", "causal = False"),
        (_FLASHINFER + "AddNot:93", "if not ("),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_Is:13", "or layer.attn_type is AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_IsNot:13", "or layer.attn_type is not AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_NotEq:18", "or layer.attn_type != AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceOrWithAnd:11", "and layer.attn_type == AttentionType.ENCODER_ONLY"),
        (_FLASHINFER + "ReplaceFalseWithTrue:23", "causal = True"),
        (_FLASHINFER + "AddNot:95", "if not self.forward_metadata.extend_no_prefix:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _WRAPPER_INDEX, (
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_GtE:20", "if self.num_wrappers >= 1:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_LtE:20", "if self.num_wrappers <= 1:"),
        (_FLASHINFER + "NumberReplacer:202", "return 1"),
        (_FLASHINFER + "NumberReplacer:203", "return -1"),
    ))
    + alike(RELEASE, GAP, _SCORE_MOD, (
        (_FA3 + "NumberReplacer:312", "if score_mod is not None and self.fa_impl_ver != 5:"),
        (_FA3 + "NumberReplacer:313", "if score_mod is not None and self.fa_impl_ver != 3:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Eq:9", "if score_mod is not None and self.fa_impl_ver == 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Gt:9", "if score_mod is not None and self.fa_impl_ver > 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_GtE:9", "if score_mod is not None and self.fa_impl_ver >= 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Lt:9", "if score_mod is not None and self.fa_impl_ver < 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_LtE:9", "if score_mod is not None and self.fa_impl_ver <= 4:"),
        (_FA3 + "NumberReplacer:400", "if score_mod is not None and self.fa_impl_ver != 5:"),
        (_FA3 + "NumberReplacer:401", "if score_mod is not None and self.fa_impl_ver != 3:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Eq:12", "if score_mod is not None and self.fa_impl_ver == 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Gt:12", "if score_mod is not None and self.fa_impl_ver > 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_GtE:12", "if score_mod is not None and self.fa_impl_ver >= 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_Lt:12", "if score_mod is not None and self.fa_impl_ver < 4:"),
        (_FA3 + "ReplaceComparisonOperator_NotEq_LtE:12", "if score_mod is not None and self.fa_impl_ver <= 4:"),
    ))
    + alike(RELEASE, EQUIVALENT, _SAVE_FALSE_MLA, (
        (_FLASHINFER_MLA + "ReplaceAndWithOr:12", "if save_kv_cache or k is not None:"),
    ))
    + alike(RELEASE, GAP, _SAVE_FALSE, (
        (_FA3 + "ReplaceAndWithOr:46", "if save_kv_cache or not self.fa_skip_kv_cache:"),
        (_FLASHINFER + "ReplaceAndWithOr:37", "if k is not None or save_kv_cache:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:4", "if save_kv_cache or k is not None and v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:5", "if save_kv_cache and k is not None or v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:9", "if save_kv_cache or k is not None and v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:10", "if save_kv_cache and k is not None or v is not None:"),
    ), closed_by=_SAVE_FALSE_CLOSED)
    + alike(RELEASE, GAP, K_READ_BACK, (
        (_FLASHINFER + "AddNot:91", "if not k is None and v is None:"),
        (_FLASHINFER + "ReplaceAndWithOr:40", "if k is None or v is None:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:14", "if k is not None and v is None:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:15", "if k is None and v is not None:"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:23", "if k is not None and v is None:"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:24", "if k is None and v is not None:"),
        (_TRITON + "AddNot:104", "if not k is None and v is None:"),
        (_TRITON + "ReplaceAndWithOr:56", "if k is None or v is None:"),
        (_TRITON + "ReplaceOrWithAnd:9", "elif k is None and v is None:"),
    ))
    + alike(RELEASE, GAP, DRAFT_SWA_ASSERT, (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:71", "and swa_loc is None"),
        (_TRITON + "ReplaceAndWithOr:77", "or forward_batch.spec_info is not None"),
    ))
    + alike(RELEASE, EQUIVALENT, _DCP_SIZE, (
        (_TRITON + "ReplaceComparisonOperator_Gt_NotEq:16", "if self.dcp_size != 1:"),
    ))
    + alike(RELEASE, GAP, _ENCODER_ONLY, (
        (_FLASHINFER + "AddNot:94", "if not not self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
        (_FLASHINFER + "ReplaceUnaryOperator_Delete_Not:21", "if  self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, EQUIVALENT, _SWA_LAYER_COUNT, (
        (_TORCH_NATIVE + "ReplaceComparisonOperator_Gt_NotEq:0", "and self.token_to_kv_pool.swa_layer_nums != 0"),
    ))
    + alike(RELEASE, GAP, _SWA_LAYER_COUNT, (
        (_TORCH_NATIVE + "ReplaceComparisonOperator_Gt_GtE:0", "and self.token_to_kv_pool.swa_layer_nums >= 0"),
        (_TORCH_NATIVE + "NumberReplacer:1", "and self.token_to_kv_pool.swa_layer_nums > -1"),
    ))
    + alike(RELEASE, EQUIVALENT, _DEAD_CACHE_LOC, (
        (_TORCH_NATIVE + "ReplaceUnaryOperator_Delete_Not:3", "if  layer.is_cross_attention"),
        (_TORCH_NATIVE + "AddNot:18", "if not not layer.is_cross_attention"),
    ))
    + alike(RELEASE, GAP, _CAPPING_METHOD, (
        (_TRITON + "ReplaceComparisonOperator_Eq_LtE:1", 'if logit_capping_method <= "tanh":'),
        (_TRITON + "ReplaceComparisonOperator_Eq_GtE:1", 'if logit_capping_method >= "tanh":'),
        (_TRITON + "ReplaceComparisonOperator_Eq_Is:0", 'if logit_capping_method is "tanh":'),
    ))
    + alike(RELEASE, GAP, _SHORT_POSITIONS, (
        (_TRITON + "ReplaceComparisonOperator_Eq_LtE:18", "and forward_batch.positions.numel() <= loc.loc.numel()"),
        (_TRITON + "ReplaceComparisonOperator_Eq_GtE:18", "and forward_batch.positions.numel() >= loc.loc.numel()"),
    ))
    + alike(RELEASE, GAP, _COUNT_IDENTITY, (
        (_TRITON + "ReplaceComparisonOperator_Eq_Is:8", "and forward_batch.positions.numel() is loc.loc.numel()"),
    ))
    # The output buffer o, the decode query's width and the test choosing o's shape: every
    # operator that keeps a width an int (torch_native 288-289, 349-352; triton 1695-1696,
    # 2302-2306).
    + alike(RELEASE, OUTSIDE_THE_WRITE, ATTENTION_OUTPUT,
            each_replacement(_TORCH_NATIVE, *_MUL, MUL_INT_REPLACED, ((1, _O_WIDTH), (3, _O_WIDTH)))
            + each_replacement(_TORCH_NATIVE, *_NOT_EQ, NOT_EQ_ORDERED + IDENTITY, ((0, _HEAD_DIMS), (2, _HEAD_DIMS))) + (
        (_TORCH_NATIVE + "AddNot:12", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "AddNot:17", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "NumberReplacer:94", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:104", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:105", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _DECODE_QUERY,
            each_replacement(_TORCH_NATIVE, *_MUL, MUL_INT_REPLACED, ((2, _Q_WIDTH),)))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _TRITON_OUTPUT,
            each_replacement(_TRITON, *_MUL, MUL_INT_REPLACED, ((14, _O_WIDTH), (22, _O_WIDTH), (21, _Q_WIDTH)))
            + each_replacement(_TRITON, *_NOT_EQ, NOT_EQ_ORDERED, ((5, "el" + _HEAD_DIMS), (7, _HEAD_DIMS)))
            + each_replacement(_TRITON, *_NOT_EQ, IDENTITY, ((4, "el" + _HEAD_DIMS), (6, _HEAD_DIMS))) + (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:42", "if attn_out is None:"),
        (_TRITON + "AddNot:103", "if not attn_out is not None:"),
        (_TRITON + "AddNot:146", "if not " + _HEAD_DIMS[3:]),
        (_TRITON + "NumberReplacer:272", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TRITON + "NumberReplacer:273", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TRITON + "NumberReplacer:406", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TRITON + "NumberReplacer:407", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
    ))
    # The dense FP8 prefill test's operands after its first (triton_backend.py 1509-1519); `is`
    # and `is not` are numbered apart, and none is put against a literal (-1 is an operator on
    # one).
    + alike(RELEASE, OUT_OF_REACH, DENSE_FP8_PREFILL, each_replacement(_TRITON, *_EQ, EQ_ORDERED, (
        (11, "and q.dtype == torch.float8_e4m3fn"), (12, "and k.dtype == torch.float8_e4m3fn"),
        (13, "and v.dtype == torch.float8_e4m3fn"), (14, "and layer.tp_q_head_num == 12"),
        (15, "and layer.tp_k_head_num == 12"), (16, "and layer.qk_head_dim == 192"),
        (17, "and layer.v_head_dim == 128"),
    )) + each_replacement(_TRITON, *_EQ, IDENTITY, (
        (5, "and q.dtype == torch.float8_e4m3fn"), (6, "and k.dtype == torch.float8_e4m3fn"),
        (7, "and v.dtype == torch.float8_e4m3fn"),
    )) + each_replacement(_TRITON, *_LTE, LTE_ORDERED, (
        (3, "and (layer.sliding_window_size is None or layer.sliding_window_size <= -1)"),
        (4, "and layer.logit_cap <= 0"),
    )) + each_replacement(_TRITON, *_LTE, IDENTITY, (
        (0, "and (layer.sliding_window_size is None or layer.sliding_window_size <= -1)"),
    )) + (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:36", "and forward_batch.attn_attend_prefix_cache is None"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:16", "and self.forward_metadata.custom_mask is not None"),
        (_TRITON + "NumberReplacer:218", "and layer.tp_q_head_num == 13"),
        (_TRITON + "NumberReplacer:219", "and layer.tp_q_head_num == 11"),
        (_TRITON + "NumberReplacer:220", "and layer.tp_k_head_num == 13"),
        (_TRITON + "NumberReplacer:221", "and layer.tp_k_head_num == 11"),
        (_TRITON + "NumberReplacer:222", "and layer.qk_head_dim == 193"),
        (_TRITON + "NumberReplacer:223", "and layer.qk_head_dim == 191"),
        (_TRITON + "NumberReplacer:224", "and layer.v_head_dim == 129"),
        (_TRITON + "NumberReplacer:225", "and layer.v_head_dim == 127"),
        (_TRITON + "NumberReplacer:226", _WINDOW + "<= - 2)"),
        (_TRITON + "NumberReplacer:227", _WINDOW + "<= - 0)"),
        (_TRITON + "ReplaceUnaryOperator_USub_UAdd:2", _WINDOW + "<= +1)"),
        (_TRITON + "ReplaceUnaryOperator_USub_Invert:2", _WINDOW + "<= ~1)"),
        (_TRITON + "ReplaceUnaryOperator_USub_Not:2", _WINDOW + "<= not 1)"),
        (_TRITON + "ReplaceUnaryOperator_Delete_USub:2", _WINDOW + "<= 1)"),
        (_TRITON + "NumberReplacer:228", "and layer.logit_cap <= 1"),
        (_TRITON + "NumberReplacer:229", "and layer.logit_cap <= -1"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _DENSE_FP8_OR, (
        (_TRITON + "ReplaceAndWithOr:37", "or forward_batch.attn_attend_prefix_cache is not None"),
        (_TRITON + "ReplaceAndWithOr:39", "or q.dtype == torch.float8_e4m3fn"),
        (_TRITON + "ReplaceAndWithOr:40", "or k.dtype == torch.float8_e4m3fn"),
        (_TRITON + "ReplaceAndWithOr:41", "or v.dtype == torch.float8_e4m3fn"),
        (_TRITON + "ReplaceAndWithOr:42", "or layer.tp_q_head_num == 12"),
        (_TRITON + "ReplaceAndWithOr:43", "or layer.tp_k_head_num == 12"),
        (_TRITON + "ReplaceAndWithOr:44", "or layer.qk_head_dim == 192"),
        (_TRITON + "ReplaceAndWithOr:45", "or layer.v_head_dim == 128"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _DENSE_FP8_GATE, (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:40", "k is None"),
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:41", "and v is None"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:20", "and sinks is not None"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:21", "and score_mod is not None"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:22", "and aux_tensors is not None"),
    ))
)  # fmt: skip
