"""The survivors of 0.5.14's door campaign (docs/mutation/sglang-0.5.14-doors.json), each read
against the release's memory_pool.py and classified (mutants/survivor_record.py says what the
classes mean). Line numbers are 0.5.14's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    ADD_REPLACED,
    ASYNC_ASSERT_BOUND,
    ASYNC_ASSERT_LOWER,
    DTYPE_IDENTITY,
    EQUIVALENT,
    GAP,
    OUT_OF_REACH,
    Survivor,
    alike,
    each_replacement,
)

RELEASE = "sglang==0.5.14"
_M = "srt/mem_cache/memory_pool.py:core/"
# Every operator cosmic-ray puts in place of `-` (ReplaceBinaryOperator_Sub_*).
_SUB_REPLACED = (("Add", "+"),) + tuple(pair for pair in ADD_REPLACED if pair[0] != "Sub")


def _each_operator(
    replaced: tuple[tuple[str, str], ...], operator: str, occurrences: tuple[tuple[int, str], ...]
) -> tuple[tuple[str, str], ...]:
    """(id, mutated line) of every replacement of `operator` at each (occurrence, line)."""
    family = {"+": "ReplaceBinaryOperator_Add", "-": "ReplaceBinaryOperator_Sub"}[operator]
    return each_replacement(_M, family, operator, replaced, occurrences)


_SIZE_LIMIT = (
    "size_limit, handed by the MHA door to _set_kv_buffer_impl (memory_pool.py 119-165), is read "
    "only by its `if (_is_cuda or _is_hip) and ...: return store_cache(...)` branch (133-142); a "
    "CPU takes the indexed assignment, which never reads it"
)
_SHUFFLE_5D = (
    "the MHA door's 5-D branch (memory_pool.py 1433-1451, `if self.kv_cache_layout == "
    '"vectorized_5d": launch_reshape_and_cache_shuffle_5d(...)`): the constructor sets that '
    "layout only under _use_aiter (`SGLANG_USE_AITER and _is_hip`, line 90, read at 1118), else "
    '"nhd"; the mutants change only what the 5-D layout does (`>` and `is` are False on "nhd" '
    "as `==` is), and that layout's kernel is ROCm's"
)
_LAYOUT_GTE = (
    '`==` to `>=` on kv_cache_layout against "vectorized_5d" (memory_pool.py 1433): the '
    'constructor allows only "nhd" and "vectorized_5d" (1117-1125), and "nhd" sorts before '
    '"vectorized_5d", so `>=` agrees with `==` on both'
)
_HIP_DSA_FP8 = (
    "set_mla_kv_buffer's ROCm branch (memory_pool.py 2245-2253, `if _is_hip and self.use_dsa and "
    "self.dtype == fp8_dtype: set_mla_kv_buffer_triton_fp8_quant(...)`): `_is_hip` is False on a "
    "CPU, so the later operands are never evaluated and the branch's arguments never built"
)
_DSA_POOL = (
    "set_mla_kv_buffer on an MLA pool built with use_dsa (DSATokenToKVPool, memory_pool.py "
    "2496-2530): the `not _is_hip` and `_is_hip or` mutants send its fp8 write through the ROCm "
    "branch's fused cast, and the dsa_kv_cache_store_fp8 branch (2255-2271) indexes the layer "
    "there. kvh builds DSATokenToKVPool only as swa_dsa's full side, a kind of the current era "
    "(pools/kinds/composite.py SWA_DSA), so on 0.5.14 no check writes an MLA pool with use_dsa"
)
_MLA_PIPELINE_RANK = (
    "set_mla_kv_buffer's `layer_id - self.start_layer` (memory_pool.py 2281), where `>>`, `|` and "
    "`^` agree with `-` at layer 0: on 0.5.14 plain_mla hands the door a KVWriteLoc it does not "
    "unwrap (the release's own divergence mla-nope-rope-no-unwrap, a raise before the store), and "
    "fa3, whose call passes the loc tensor, ran no pipeline-rank scenario: it was outside the "
    "backends' extend focus"
)
_MLA_PIPELINE_CLOSED = (
    "the pipeline-rank scenario (layers 3 to 6) in every backend's extend focus "
    "(backends/focus.py EXTEND_FOCUS), so fa3's call writes the MLA door past layer 0"
)

SURVIVORS_0_5_14: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, ASYNC_ASSERT_BOUND, _each_operator(ADD_REPLACED, "+", (
        (28, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MHA)")'),
        (38, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MLA)")'),
        (39, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_mla_kv_buffer (MLA)")'),
    )))
    + alike(RELEASE, OUT_OF_REACH, _SIZE_LIMIT, _each_operator(ADD_REPLACED, "+", (
        (29, "size_limit=self.size + self.page_size,"),
    )))
    + alike(RELEASE, EQUIVALENT, ASYNC_ASSERT_LOWER, tuple(
        (f"{_M}NumberReplacer:{occurrence}", f'maybe_detect_oob(loc, {low}, self.size + self.page_size, "{door}")')
        for first, door in ((260, "set_kv_buffer (MHA)"), (350, "set_kv_buffer (MLA)"), (352, "set_mla_kv_buffer (MLA)"))
        for occurrence, low in ((first, 1), (first + 1, -1))
    ))
    + alike(RELEASE, EQUIVALENT, DTYPE_IDENTITY, (
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:4", "if cache_k.dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:5", "if self.store_dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:21", "if cache_k.dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:22", "if self.store_dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:23", "if cache_k_nope.dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:24", "if self.store_dtype is not self.dtype:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _SHUFFLE_5D, _each_operator(_SUB_REPLACED, "-", (
        (13, "self.k_buffer[layer_id - self.start_layer],"),
        (14, "self.v_buffer[layer_id - self.start_layer],"),
    )) + (
        (_M + "ReplaceComparisonOperator_Eq_Gt:19", 'if self.kv_cache_layout > "vectorized_5d":'),
        (_M + "ReplaceComparisonOperator_Eq_Is:7", 'if self.kv_cache_layout is "vectorized_5d":'),
    ))
    + alike(RELEASE, EQUIVALENT, _LAYOUT_GTE, (
        (_M + "ReplaceComparisonOperator_Eq_GtE:19", 'if self.kv_cache_layout >= "vectorized_5d":'),
    ))
    + alike(RELEASE, OUT_OF_REACH, _HIP_DSA_FP8, _each_operator(_SUB_REPLACED, "-", (
        (45, "self.kv_buffer[layer_id - self.start_layer],"),
    )) + tuple(
        (f"{_M}ReplaceComparisonOperator_Eq_{op}:{occurrence}", f"if _is_hip and self.use_dsa and self.dtype {symbol} fp8_dtype:")
        for op, symbol, occurrence in (
            ("NotEq", "!=", 24), ("Lt", "<", 24), ("LtE", "<=", 24), ("Gt", ">", 24),
            ("GtE", ">=", 24), ("Is", "is", 9), ("IsNot", "is not", 9),
        )
    ))
    + alike(RELEASE, GAP, _DSA_POOL, _each_operator(_SUB_REPLACED, "-", (
        (46, "self.kv_buffer[layer_id - self.start_layer],"),
    )) + (
        (_M + "AddNot:144", "if not _is_hip and self.use_dsa and self.dtype == fp8_dtype:"),
        (_M + "ReplaceAndWithOr:13", "if _is_hip or self.use_dsa and self.dtype == fp8_dtype:"),
    ))
    + alike(RELEASE, GAP, _MLA_PIPELINE_RANK, tuple(
        (f"{_M}ReplaceBinaryOperator_Sub_{op}:47", f"self.kv_buffer[layer_id {symbol} self.start_layer],")
        for op, symbol in (("RShift", ">>"), ("BitOr", "|"), ("BitXor", "^"))
    ), closed_by=_MLA_PIPELINE_CLOSED)
)  # fmt: skip
