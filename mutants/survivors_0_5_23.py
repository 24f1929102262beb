"""The survivors of 0.5.23's door campaign (docs/mutation/sglang-0.5.23-doors.json), each read
and classified (mutants/survivor_record.py says what the classes mean)."""

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
)

_POOL = "srt/mem_cache/memory_pool.py:core/ReplaceBinaryOperator_"

_MLA_BOUND = "(self.size + self.page_size) * self._write_loc_dcp_span,"
SURVIVORS_0_5_23: tuple[Survivor, ...] = alike(
    "sglang==0.5.23", EQUIVALENT, ASYNC_ASSERT_BOUND,
    tuple(
        (f"{_POOL}Add_{op}:{occurrence}", line.replace("+", symbol, 1))
        for op, symbol in ADD_REPLACED
        for occurrence, line in (
            (37, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MHA)")'),
            (66, 'maybe_detect_oob(loc, 0, self.size + self.page_size, "set_kv_buffer (MLA)")'),
            (67, _MLA_BOUND),
        )
    )
    # The MLA bound's `*`, replaced as cosmic-ray does (ReplaceBinaryOperator_Mul_*).
    + tuple(
        (f"{_POOL}Mul_{op}:53", _MLA_BOUND.replace(" * ", f" {symbol} ", 1))
        for op, symbol in ADD_REPLACED if op != "Mul"
    ) + (
        (f"{_POOL}Mul_Add:53", _MLA_BOUND.replace(" * ", " + ", 1)),
    ),
)  # fmt: skip

# The door campaign's other survivors on 0.5.23 (docs/mutation/sglang-0.5.23-doors.json), read.
_M, _U = "srt/mem_cache/memory_pool.py:core/", "srt/mem_cache/unified_memory_pool.py:core/"
_HND_CUDA_LAUNCHER = (
    "the HND door's CUDA branch (memory_pool.py 2966-2976, `if _is_cuda and ...: "
    "launch_reshape_and_cache_flash(...)`): `_is_cuda` is False on a CPU, so the test's later "
    "operands are never evaluated and the launcher's arguments never built; the `and` to `or` "
    "mutants send a write whose K and V are equally wide and contiguous to that CUDA kernel, "
    "which only a CUDA device runs (kvh's HND scenarios keep V narrower: the CPU path runs)"
)
_DCP_WRITE = (
    "the decode-context-parallel write (memory_pool.py 2938-2960: the dcp_kv_mask the Triton "
    "backend passes under --dcp-size > 1, stored by masked_set_kv_buffer_kernel): no scenario "
    "modelled a DCP rank, so no check passed a mask"
)
_DCP_CLOSED = (
    "the DCP rank's scenarios dcp-rank and dcp-rank-scaled (rank 1 of 2 on a pipeline rank, two "
    "heads) through the triton_dcp call site, which drives 0.5.23's TritonAttnBackend with "
    "dcp_size 2 (backends/triton_dcp.py): every one killed in session 12's campaign"
)
_MLA_DCP_ASSERT = (
    "the MLA door's DCP assert (memory_pool.py 4957-4961, `write_loc_is_dcp_resolved or "
    "dcp_replicated or not get_parallel().dcp_enabled`): outside a DCP rank the last operand is "
    "True, and on kvh's MLA DCP rank (session 17: the plain MLA pool, flashinfer_mla_dcp) both "
    "first operands are False, so the `or` to `and` mutant asserts where the release does; only "
    "a resolved pool (the unified MLA pool, whose plan resolves the loc through allocators kvh "
    "does not build) or a dcp_replicated one (a DSA pool of a widened loc space) under an "
    "enabled group tells them apart"
)
_QUANTIZED_MHA = (
    "the MHA door's quantized-KV path (memory_pool.py 2912-2924, is_quantized_kv_cache: a pool "
    "built with a KV-cache quantization method): kvh builds MHATokenToKVPool without one (its FP4 "
    "kinds are MHATokenToKVPoolFP4's), so no check reached it. A CPU server with an fp8_e4m3 "
    "cache builds it with CPUFP8KVCacheMethod (kv_cache_configurator.py 452-455, intel_amx only)"
)
_QUANTIZED_CLOSED = (
    "the mha_cpu_fp8 kind (a CPU server's fp8_e4m3 cache: the release's MHATokenToKVPool built "
    "with its CPUFP8KVCacheMethod, pools/kinds/layout.py) through plain: both killed in session "
    "12's campaign, every write raising"
)
_UNIFIED_SWA_CLOSED = (
    "triton's call site on the unified SWA kind (backends/triton.py; the model writes the "
    "release's pool, since the release's class reads the window loc from allocators kvh does not "
    "build): its call omits the scales when both are None, so the defaults divide on a cast; all "
    "4 killed in session 12's campaign"
)
_UNIFIED_SWA_DEFAULT_SCALES = (
    "the default k_scale and v_scale (1.0) of UnifiedSWAKVPool.set_kv_buffer, which it hands its "
    "sub-pools to divide by on a cast: only `plain` wrote the unified SWA kind, and it passes its "
    "scales (None where unscaled), so no check omitted them as the Triton backend does when both "
    "are None"
)
SURVIVORS_0_5_23 += (
    ()
    + alike(
        "sglang==0.5.23", EQUIVALENT, ASYNC_ASSERT_LOWER,
        (
        (_M + 'NumberReplacer:446', 'maybe_detect_oob(loc, 1, self.size + self.page_size, "set_kv_buffer (MHA)")'),
        (_M + 'NumberReplacer:447', 'maybe_detect_oob(loc, -1, self.size + self.page_size, "set_kv_buffer (MHA)")'),
        (_M + 'NumberReplacer:664', 'maybe_detect_oob(loc, 1, self.size + self.page_size, "set_kv_buffer (MLA)")'),
        (_M + 'NumberReplacer:665', 'maybe_detect_oob(loc, -1, self.size + self.page_size, "set_kv_buffer (MLA)")'),
        (_M + 'NumberReplacer:670', 'loc, 1,'),
        (_M + 'NumberReplacer:671', 'loc, -1,'),
        ),
    )
    + alike(
        "sglang==0.5.23", EQUIVALENT, DTYPE_IDENTITY,
        (
        (_M + 'ReplaceComparisonOperator_NotEq_IsNot:15', 'if cache_k.dtype is not self.dtype:'),
        (_M + 'ReplaceComparisonOperator_NotEq_IsNot:16', 'if self.store_dtype is not self.dtype:'),
        (_M + 'ReplaceComparisonOperator_NotEq_IsNot:34', 'if cache_k.dtype is not self.dtype:'),
        (_M + 'ReplaceComparisonOperator_NotEq_IsNot:35', 'if self.store_dtype is not self.dtype:'),
        ),
    )
    + alike(
        "sglang==0.5.23", OUT_OF_REACH, _HND_CUDA_LAUNCHER,
        (
        (_M + 'ReplaceAndWithOr:59', 'or self.head_dim == self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_Gt:42', 'and self.head_dim > self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_GtE:42', 'and self.head_dim >= self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_Is:21', 'and self.head_dim is self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_IsNot:21', 'and self.head_dim is not self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_Lt:42', 'and self.head_dim < self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_LtE:42', 'and self.head_dim <= self.v_head_dim'),
        (_M + 'ReplaceComparisonOperator_Eq_NotEq:42', 'and self.head_dim != self.v_head_dim'),
        (_M + 'NumberReplacer:462', 'and cache_k.stride()[ 2:] == cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'NumberReplacer:463', 'and cache_k.stride()[ 0:] == cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'NumberReplacer:464', 'and cache_k.stride()[1:] == cache_v.stride()[ 2:] == (self.head_dim, 1)'),
        (_M + 'NumberReplacer:465', 'and cache_k.stride()[1:] == cache_v.stride()[ 0:] == (self.head_dim, 1)'),
        (_M + 'NumberReplacer:466', 'and cache_k.stride()[1:] == cache_v.stride()[1:] == (self.head_dim, 2)'),
        (_M + 'NumberReplacer:467', 'and cache_k.stride()[1:] == cache_v.stride()[1:] == (self.head_dim, 0)'),
        (_M + 'ReplaceAndWithOr:60', 'or cache_k.stride()[1:] == cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Gt:43', 'and cache_k.stride()[1:] > cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Gt:44', 'and cache_k.stride()[1:] == cache_v.stride()[1:] > (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_GtE:43', 'and cache_k.stride()[1:] >= cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_GtE:44', 'and cache_k.stride()[1:] == cache_v.stride()[1:] >= (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Is:22', 'and cache_k.stride()[1:] is cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Is:23', 'and cache_k.stride()[1:] == cache_v.stride()[1:] is (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_IsNot:22', 'and cache_k.stride()[1:] is not cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_IsNot:23', 'and cache_k.stride()[1:] == cache_v.stride()[1:] is not (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Lt:43', 'and cache_k.stride()[1:] < cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_Lt:44', 'and cache_k.stride()[1:] == cache_v.stride()[1:] < (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_LtE:43', 'and cache_k.stride()[1:] <= cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_LtE:44', 'and cache_k.stride()[1:] == cache_v.stride()[1:] <= (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_NotEq:43', 'and cache_k.stride()[1:] != cache_v.stride()[1:] == (self.head_dim, 1)'),
        (_M + 'ReplaceComparisonOperator_Eq_NotEq:44', 'and cache_k.stride()[1:] == cache_v.stride()[1:] != (self.head_dim, 1)'),
        (_M + 'NumberReplacer:468', 'k_buf.permute( 1, 2, 1, 3),'),
        (_M + 'NumberReplacer:469', 'k_buf.permute( -1, 2, 1, 3),'),
        (_M + 'NumberReplacer:470', 'k_buf.permute(0, 3, 1, 3),'),
        (_M + 'NumberReplacer:471', 'k_buf.permute(0, 1, 1, 3),'),
        (_M + 'NumberReplacer:472', 'k_buf.permute(0, 2, 2, 3),'),
        (_M + 'NumberReplacer:473', 'k_buf.permute(0, 2, 0, 3),'),
        (_M + 'NumberReplacer:474', 'k_buf.permute(0, 2, 1, 4),'),
        (_M + 'NumberReplacer:475', 'k_buf.permute(0, 2, 1, 2),'),
        (_M + 'NumberReplacer:476', 'v_buf.permute( 1, 2, 1, 3),'),
        (_M + 'NumberReplacer:477', 'v_buf.permute( -1, 2, 1, 3),'),
        (_M + 'NumberReplacer:478', 'v_buf.permute(0, 3, 1, 3),'),
        (_M + 'NumberReplacer:479', 'v_buf.permute(0, 1, 1, 3),'),
        (_M + 'NumberReplacer:480', 'v_buf.permute(0, 2, 2, 3),'),
        (_M + 'NumberReplacer:481', 'v_buf.permute(0, 2, 0, 3),'),
        (_M + 'NumberReplacer:482', 'v_buf.permute(0, 2, 1, 4),'),
        (_M + 'NumberReplacer:483', 'v_buf.permute(0, 2, 1, 2),'),
        ),
    )
    + alike(
        "sglang==0.5.23", GAP, _DCP_WRITE,
        (
        (_M + 'ReplaceBinaryOperator_Sub_Add:20', 'k_buf = self.k_buffer[layer_id + self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitAnd:20', 'k_buf = self.k_buffer[layer_id & self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitOr:20', 'k_buf = self.k_buffer[layer_id | self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitXor:20', 'k_buf = self.k_buffer[layer_id ^ self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Div:20', 'k_buf = self.k_buffer[layer_id / self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_FloorDiv:20', 'k_buf = self.k_buffer[layer_id // self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_LShift:20', 'k_buf = self.k_buffer[layer_id << self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Mod:20', 'k_buf = self.k_buffer[layer_id % self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Mul:20', 'k_buf = self.k_buffer[layer_id * self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Pow:20', 'k_buf = self.k_buffer[layer_id ** self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_RShift:20', 'k_buf = self.k_buffer[layer_id >> self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Add:21', 'v_buf = self.v_buffer[layer_id + self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitAnd:21', 'v_buf = self.v_buffer[layer_id & self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitOr:21', 'v_buf = self.v_buffer[layer_id | self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_BitXor:21', 'v_buf = self.v_buffer[layer_id ^ self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Div:21', 'v_buf = self.v_buffer[layer_id / self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_FloorDiv:21', 'v_buf = self.v_buffer[layer_id // self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_LShift:21', 'v_buf = self.v_buffer[layer_id << self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Mod:21', 'v_buf = self.v_buffer[layer_id % self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Mul:21', 'v_buf = self.v_buffer[layer_id * self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_Pow:21', 'v_buf = self.v_buffer[layer_id ** self.start_layer]'),
        (_M + 'ReplaceBinaryOperator_Sub_RShift:21', 'v_buf = self.v_buffer[layer_id >> self.start_layer]'),
        (_M + 'NumberReplacer:448', 'D, 129,'),
        (_M + 'NumberReplacer:449', 'D, 127,'),
        (_M + 'NumberReplacer:450', 'cache_k.stride( 1),'),
        (_M + 'NumberReplacer:451', 'cache_k.stride( -1),'),
        (_M + 'NumberReplacer:452', 'cache_k.stride( 2),'),
        (_M + 'NumberReplacer:453', 'cache_k.stride( 0),'),
        (_M + 'NumberReplacer:454', 'cache_v.stride( 1),'),
        (_M + 'NumberReplacer:455', 'cache_v.stride( -1),'),
        (_M + 'NumberReplacer:456', 'cache_v.stride( 2),'),
        (_M + 'NumberReplacer:457', 'cache_v.stride( 0),'),
        (_M + 'NumberReplacer:458', 'k_buf.stride( 1),'),
        (_M + 'NumberReplacer:459', 'k_buf.stride( -1),'),
        (_M + 'NumberReplacer:460', 'v_buf.stride( 1),'),
        (_M + 'NumberReplacer:461', 'v_buf.stride( -1),'),
        ),
        closed_by=_DCP_CLOSED,
    )
    + alike(
        "sglang==0.5.23", GAP, _MLA_DCP_ASSERT,
        ((_M + 'ReplaceOrWithAnd:28', 'and self.dcp_replicated'),),
    )
    + alike(
        "sglang==0.5.23", GAP, _QUANTIZED_MHA,
        (
        (_M + 'AddNot:222', 'if not dcp_kv_mask is not None:'),
        (_M + 'ReplaceComparisonOperator_IsNot_Is:61', 'if dcp_kv_mask is None:'),
        ),
        closed_by=_QUANTIZED_CLOSED,
    )
    + alike(
        "sglang==0.5.23", GAP, _UNIFIED_SWA_DEFAULT_SCALES,
        (
        (_U + 'NumberReplacer:220', 'k_scale: float = 2.0,'),
        (_U + 'NumberReplacer:221', 'k_scale: float = 0.0,'),
        (_U + 'NumberReplacer:222', 'v_scale: float = 2.0,'),
        (_U + 'NumberReplacer:223', 'v_scale: float = 0.0,'),
        ),
        closed_by=_UNIFIED_SWA_CLOSED,
    )

)  # fmt: skip
