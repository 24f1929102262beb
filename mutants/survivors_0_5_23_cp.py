"""The scope of 0.5.23 judged again with cp in its universe (docs/mutation/sglang-0.5.23-scope.json):
the records of its survivors in the context-parallel write's code around the zigzag strategy,
each read against the release: its padding (layers/cp/padding.py), the strategy's kind
(layers/cp/base.py), the CP utilities, the parallel state's gather and the forward context a
model runner publishes. The strategy's own records: survivors_0_5_23_zigzag.py. Line numbers
are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    EQ_ORDERED,
    EQUIVALENT,
    GAP,
    IDENTITY,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)
from mutants.survivors_0_5_23_full import RELEASE

_CPB = "srt/layers/cp/base.py:core/"
_PAD = "srt/layers/cp/padding.py:core/"
_CPU = "srt/layers/cp/utils.py:core/"
_CTX = "srt/model_executor/forward_context.py:core/"
_PS = "srt/distributed/parallel_state.py:core/"
GATHER_F = "parallel_state.py GroupCoordinator._all_gather_into_tensor"

ROCM_ALL_GATHER = (
    "ROCm aiter's custom all-gather (parallel_state.py 1298-1324): it needs is_hip() and a live "
    "custom all-reduce communicator (_has_aiter_custom_all_gather: ca_comm, which a GPU group "
    "builds); on a CPU group ca_comm is None, so the test is False however its operands are "
    "joined, and its body never runs"
)
MSCCLPP_ALL_GATHER = (
    "the MSCCL++ all-gather (parallel_state.py 1326-1331): a group builds pymscclpp_comm only "
    "where a server enables MSCCL++ (its enable_mscclpp option, distributed/bootstrap.py 253, "
    "off by default), a CUDA communicator; kvh's CPU group has none"
)
NCCL_ALL_GATHER = (
    "the NCCL all-gather (parallel_state.py 1333-1341): on a CPU group the release builds a "
    "PyNcclCommunicator that disables itself (no NCCL library, pynccl.py 71-79), so the test "
    "is False and gloo's all_gather_single gathers; the mutated tests differ only on a group "
    "with an enabled communicator (CUDA) or with none at all (an NPU or XPU group, or the "
    "mooncake backend: use_pynccl, parallel_state.py 2180-2185)"
)

PADDING_TRIMMED = (
    "the physical length of a rank's share only sizes the zero rows that pad it for the "
    "collective (pad_local_rows, _all_gather_reorganized); every gather trims each rank's chunk "
    "back to its logical length (per_rank_logical_token) before anything leaves the strategy, "
    "the written k and v and the gathered hidden states alike. A share the mutant pads to "
    "fewer rows than it holds meets pad_local_rows' `assert pad_size >= 0` (those mutants are "
    "killed); these never pad below it"
)
_ALIGNMENT_ONLY = (
    "is_zigzag() (or its test negated at padding.py 29) is read only by "
    "get_cp_padding_align_size, which picks the alignment a rank's physical share is rounded "
    "up to, N or 2N rows for N ranks: a different alignment rounds to a different multiple, "
    "never below the logical length. " + PADDING_TRIMMED
)
_ROUNDED_HIGHER = (
    "the rounding of the physical share (the same on every rank: it rounds the largest share) "
    "changed so that it never comes out below the logical share m: with can_apply's floor of "
    "2N tokens a sequence each rank holds m >= 2 rows, and for an alignment a >= 2 each mutated "
    "form ((m*a - 1)//a*a = (m-1)*a, (m << a-1)//a*a, (m + a + 1)//a*a, (m + a)//a*a, "
    "((m + a) << 1)//a*a, ((m + a) | 1)//a*a, ((m + a) ^ 1)//a*a, ceil(m/a) << a, "
    "m + a - 1 + a*a, (m + a - 1)*a*a, (m + a - 1) | a*a) is >= m; some cost memory, "
    "none a row. " + PADDING_TRIMMED
)
_ALIGNMENT_CHANGED = (
    "another zigzag alignment than 2N for N ranks (N + 2, N // 2, N ** 2, N << 2, N | 2, 3N, "
    "N): a positive int for every N >= 2 (a CP group has at least two ranks: can_apply), and for "
    "kvh's N = 2 the same 4 for N + 2 and N ** 2. The alignment rounds the uniform physical "
    "share up, never below the logical. " + PADDING_TRIMMED
)
_ALIGNMENT_ZERO = (
    "`attn_cp_size & 2` as the zigzag alignment: 2 for kvh's two ranks (rounding up as 2N "
    "does), but 0 for a group of 4 or 5 ranks (and every N with bit 1 clear), where the "
    "release's rounding divides by zero; kvh's CP group has two ranks only, so no check "
    "tells them apart"
)
_LOCAL_PADDING = (
    "how many zero rows pad_local_rows appends to a rank's local share: each mutated count "
    "(target + n, target * n, target // n, target % n, target >> n, target | n, target & n, "
    "target ^ n for a share of n >= 2 logical rows) is a non-negative int, and the changed "
    "tests (another comparison for `==` at lines 50 and 57, `is not None` at 49, the whole "
    "test negated at 48) either return the share unpadded or pad it as the release does; either way the rank keeps its n logical "
    "rows first. The CP write's gather takes each rank's first per_rank_logical_token rows "
    "(_all_gather_reorganized's x[:local_len]) before the door, so the cache gets the same rows; "
    "what the count changes is the length of the rank's local "
    "tensors in the rest of a model (a rank's hidden states out of step with its peers'), "
    "which no write reads"
)
_CONTEXT_CALLERS = (
    "`/` for `*` in forward_context's signature: ctx becomes positional-only and forward_batch "
    "positional-or-keyword. Every caller in 0.5.23 passes ctx by position and forward_batch by "
    "keyword (eager_runner.py 237, 266, 351, 461; decode_cuda_graph_runner.py 1392, 1404; "
    "base_runner.py 765; row_bucket_graph_runner.py 156), which both signatures accept alike"
)
_MOE_COUNT = (
    "the forward context's moe_num_token_non_padded, which only the MoE layers read "
    "(layers/moe/topk.py, batch_overlap/operations.py, the CP strategies' MoE counts, "
    "deepseek_v4_replay_tail.py): no attention backend or pool reads it"
)

_UNIFORM_ACTUAL = (
    "another index into per_rank_actual_token in pad_local_rows: it runs only once "
    "pad_logical_token_to_physical has set every rank's entry to the same physical length "
    "(padding.py 42; before that per_rank_logical_token is None and it returns at 48-51), so "
    "any index reads the same value"
)
_ASSERT_WIDENED = (
    "pad_local_rows' `assert pad_size >= 0` widened to -1: a share never holds more rows than "
    "the physical length (pad_logical_token_to_physical rounds the largest share up), so the "
    "release's assert never fails; a pad of -1 would fail in new_zeros instead"
)
_NO_EXEC_CONFIG = (
    "is_symmetric_memory_enabled's fallback where no server config is published (get_exec() "
    "raises ValueError, pynccl_allocator.py 235-238): on kvh's CP ranks get_exec() answers, "
    "so the handler never runs; a process that gathers with no config published would tell "
    "the mutant (the ValueError escapes) from the release, and kvh builds none such"
)
_NAMESPACE_UNPUBLISHED = (
    "config_bag's test of a published namespace changed (its first `not` removed, or `or` to "
    "`and`): it raises where a namespace is published, or fails on bags[name] where others "
    "are, and agrees where none is. Measured: no check of the unmodified "
    "release ran the line after it (runtime_context.py 1070), so every config_bag call on "
    "kvh's ranks asked for a namespace nobody published and raised its ValueError, which its "
    "caller handled; a rank with the asked namespace published would tell them apart"
)
_DP_BUFFER_LEN = (
    "whether prepare_cp_forward sets the local DP buffer length (utils.py 171-179): "
    "set_local_dp_buffer_len sizes the DP-attention gather buffers (layers/dp_attention.py), "
    "read by the MoE dispatchers, the layer boundaries and DeepSeek V4's backend; no pool and "
    "not the FlashAttention CP write that kvh's cp cells drive reads it"
)
_LOC_TRIMMED = (
    "prepare_cp_forward's cut of out_cache_loc to the batch's tokens (utils.py 181-182), "
    "skipped by the mutants: the locs of kvh's cp batches are as long as their tokens, so the "
    "cut changes nothing; a batch whose out_cache_loc is padded past its tokens (a CUDA-graph "
    "or DP-padded batch) would tell them apart"
)
_NO_CPU_LENGTHS = (
    "_to_int_list of a tensor (utils.py 327): measured, no check ran the line, because the "
    "ForwardBatch of kvh's cp cells carries no seq_lens_cpu or extend_seq_lens_cpu (a "
    "scheduler's batch carries both), so prepare_cp_forward counts the tokens from input_ids "
    "and build_metadata cuts the batch as one sequence; a batch with those lists would tell "
    "the mutant apart"
)
_REQUESTS_HANDED = (
    "the cp cells' batch carries its requests on the host as a server's does (session 23, "
    "backends/cp_release.py host_requests): judged again in session 24's targeted campaign "
    "(--function _to_int_list over the same universe), killed at the builtin scenarios, an "
    "AttributeError where the mutant calls tolist() on the list the release is handed"
)
# cosmic-ray's replacements of `==` against a name (against the literal 0 it makes no `is`).
_COMPARISONS = EQ_ORDERED + IDENTITY

SURVIVORS_0_5_23_CP: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, _ALIGNMENT_ONLY, tuple(
        (f"{_CPB}ReplaceComparisonOperator_Eq_{name}:7", f"return get_cp_strategy_kind() {symbol} ContextParallelStrategyKind.ZIGZAG")
        for name, symbol in _COMPARISONS
    ) + (
        (_PAD + "AddNot:0", "if not is_zigzag():"),
    ))
    + alike(RELEASE, EQUIVALENT, _ROUNDED_HIGHER, (
        (_PAD + "ReplaceBinaryOperator_Add_Mul:0", "(max(logical_tokens) * align_size - 1) // align_size * align_size"),
        (_PAD + "ReplaceBinaryOperator_Add_LShift:0", "(max(logical_tokens) << align_size - 1) // align_size * align_size"),
        (_PAD + "ReplaceBinaryOperator_Mul_LShift:1", "(max(logical_tokens) + align_size - 1) // align_size << align_size"),
        (_PAD + "ReplaceBinaryOperator_FloorDiv_Add:0", "(max(logical_tokens) + align_size - 1) + align_size * align_size"),
        (_PAD + "ReplaceBinaryOperator_FloorDiv_Mul:0", "(max(logical_tokens) + align_size - 1) * align_size * align_size"),
        (_PAD + "ReplaceBinaryOperator_FloorDiv_BitOr:0", "(max(logical_tokens) + align_size - 1) | align_size * align_size"),
        (_PAD + "NumberReplacer:3", "(max(logical_tokens) + align_size - 0) // align_size * align_size"),
    ) + tuple(
        (f"{_PAD}ReplaceBinaryOperator_Sub_{name}:0", f"(max(logical_tokens) + align_size {symbol} 1) // align_size * align_size")
        for name, symbol in (
            ("Add", "+"), ("Mul", "*"), ("FloorDiv", "//"), ("Pow", "**"), ("LShift", "<<"),
            ("BitOr", "|"), ("BitXor", "^"),
        )
    ))
    + alike(RELEASE, EQUIVALENT, _ALIGNMENT_CHANGED, tuple(
        (f"{_PAD}ReplaceBinaryOperator_Mul_{name}:0", f"return attn_cp_size {symbol} 2")
        for name, symbol in (
            ("Add", "+"), ("FloorDiv", "//"), ("Pow", "**"), ("LShift", "<<"), ("BitOr", "|"),
        )
    ) + (
        (_PAD + "NumberReplacer:0", "return attn_cp_size * 3"),
        (_PAD + "NumberReplacer:1", "return attn_cp_size * 1"),
    ))
    + alike(RELEASE, EQUIVALENT, _UNIFORM_ACTUAL, (
        (_PAD + "NumberReplacer:4", "target_len = metadata.per_rank_actual_token[ 1]"),
        (_PAD + "NumberReplacer:5", "target_len = metadata.per_rank_actual_token[ -1]"),
    ))
    + alike(RELEASE, EQUIVALENT, _ASSERT_WIDENED, (
        (_PAD + "NumberReplacer:7", "assert pad_size >= -1"),
    ))
    + alike(RELEASE, OUT_OF_REACH, ROCM_ALL_GATHER, (
        (_PS + "ReplaceAndWithOr:56", "or envs.SGLANG_USE_AITER_AG.get()"),
        (_PS + "ReplaceAndWithOr:57", "or self._has_aiter_custom_all_gather()"),
    ))
    + alike(RELEASE, OUT_OF_REACH, NCCL_ALL_GATHER, (
        (_PS + "ReplaceComparisonOperator_IsNot_Is:29", "if pynccl_comm is None and ("),
        (_PS + "AddNot:120", "if not pynccl_comm is not None and ("),
        (_PS + "ReplaceOrWithAnd:10", "not pynccl_comm.disabled and self.is_symmetric_memory_enabled()"),
    ))
    + alike(RELEASE, GAP, _NAMESPACE_UNPUBLISHED, (
        ("srt/runtime_context.py:core/ReplaceUnaryOperator_Delete_Not:7", "if  bags or name not in bags:"),
        ("srt/runtime_context.py:core/AddNot:57", "if not not bags or name not in bags:"),
        ("srt/runtime_context.py:core/ReplaceOrWithAnd:3", "if not bags and name not in bags:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _DP_BUFFER_LEN, (
        (_CPU + "ReplaceComparisonOperator_IsNot_Is:2", 'and getattr(forward_batch, "global_num_tokens_cpu", None) is None'),
        (_CPU + "ReplaceUnaryOperator_Delete_Not:4", "get_parallel().enable_cp_tp_group_sharing"),
        (_CPU + "AddNot:14", "if not ("),
        (_CPU + "ReplaceAndWithOr:5", 'or getattr(forward_batch, "global_num_tokens_cpu", None) is not None'),
    ))
    + alike(RELEASE, GAP, _LOC_TRIMMED, (
        (_CPU + "ReplaceComparisonOperator_IsNot_Is:3", 'if getattr(forward_batch, "out_cache_loc", None) is None:'),
        (_CPU + "AddNot:15", 'if not getattr(forward_batch, "out_cache_loc", None) is not None:'),
    ))
    + alike(RELEASE, GAP, _NO_CPU_LENGTHS, (
        (_CPU + "AddNot:48", 'if not hasattr(values, "tolist"):'),
    ), closed_by=_REQUESTS_HANDED)
    + alike(RELEASE, GAP, _NO_EXEC_CONFIG, (
        ("srt/distributed/device_communicators/pynccl_allocator.py:core/ExceptionReplacer:2", "except CosmicRayTestingException:"),
    ))
    + alike(RELEASE, GAP, _ALIGNMENT_ZERO, (
        (_PAD + "ReplaceBinaryOperator_Mul_BitAnd:0", "return attn_cp_size & 2"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _LOCAL_PADDING, tuple(
        (f"{_PAD}ReplaceBinaryOperator_Sub_{name}:1", f"pad_size = target_len {symbol} x.shape[dim]")
        for name, symbol in (
            ("Add", "+"), ("Mul", "*"), ("FloorDiv", "//"), ("Mod", "%"), ("RShift", ">>"),
            ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
        )
    ) + tuple(
        (f"{_PAD}ReplaceComparisonOperator_Eq_{name}:0", f"or metadata.per_rank_logical_token {symbol} metadata.per_rank_actual_token")
        for name, symbol in _COMPARISONS
    ) + tuple(
        (f"{_PAD}ReplaceComparisonOperator_Eq_{name}:1", f"if pad_size {symbol} 0:")
        for name, symbol in EQ_ORDERED
    ) + (
        (_PAD + "ReplaceComparisonOperator_Is_IsNot:0", "metadata.per_rank_logical_token is not None"),
        (_PAD + "AddNot:1", "if not ("),
        (_PAD + "AddNot:3", "if not pad_size == 0:"),
        (_PAD + "ReplaceOrWithAnd:0", "and metadata.per_rank_logical_token == metadata.per_rank_actual_token"),
        (_PAD + "NumberReplacer:8", "if pad_size == 1:"),
        (_PAD + "NumberReplacer:9", "if pad_size == -1:"),
    ))
    + alike(RELEASE, EQUIVALENT, _CONTEXT_CALLERS, (
        (_CTX + "ReplaceBinaryOperator_Mul_Div:0", "ctx: ForwardContext, /, forward_batch: Optional[ForwardBatch] = None"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _MOE_COUNT, (
        (_CTX + "ReplaceComparisonOperator_Is_IsNot:0", "elif ctx.moe_num_token_non_padded is not None and _current is not None:"),
    ))
)  # fmt: skip
