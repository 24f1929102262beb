"""The full campaign over 0.5.23's whole scope (docs/mutation/sglang-0.5.23-scope.json): the
records of the mutants it judged that survived in the pools, their write-loc helpers and the MLA
scatter, each read against the release (the attention backends' are in
mutants/survivors_0_5_23_backends.py, the runtime's around the write in
mutants/survivors_0_5_23_context.py, the stretches no check runs in
mutants/stretches_0_5_23.py). Line numbers are 0.5.23's; the seeded sample's records are in
mutants/survivors_0_5_23_scope.py."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    DTYPE_IDENTITY,
    EQUIVALENT,
    GAP,
    OUT_OF_REACH,
    Survivor,
    alike,
)
from mutants.survivors_0_5_23_scope import ALT_STREAM

RELEASE = "sglang==0.5.23"
_M = "srt/mem_cache/memory_pool.py:core/"
_K = "kernels/ops/kvcache/mla_buffer.py:core/"
_CUDA_SIZE_LIMIT = (
    "the size limit _store_kv_layer hands _set_kv_buffer_impl, read only by its "
    "`if (_is_cuda or _is_hip) and can_use_store_cache(...)` branch (the CUDA store_cache "
    "kernel's bound); a CPU takes the indexed assignment"
)
_CHUNK_BITS = (
    "`+` replaced by `|` or `^` in the masked DCP kernel's `c * CHUNK + offs`: CHUNK is 128 (the "
    "door's launch, memory_pool.py 2952) and offs = tl.arange(0, CHUNK) lies below it, so the "
    "multiple of 128 and offs share no bit and the three agree"
)
_CUDA_ROW_BYTES = (
    "a row's byte width, read only by _set_kv_buffer_impl's `if (_is_cuda or _is_hip) and "
    "can_use_store_cache(...)` branch (memory_pool.py 175-185, the CUDA store_cache kernel); a "
    "CPU takes the indexed assignment"
)
_KEYWORD_MARKER = (
    "the keyword-only marker `*` replaced by the positional-only `/`: the release's 45 callers "
    "pass the batch (and the layer) by position and swa_loc and full_loc by keyword, which both "
    "signatures accept alike"
)
_FLAG_SHORT_CIRCUIT = (
    "the mutated operand follows module flags this machine set False, so it is never evaluated: "
    "`_is_xpu and` (the XPU store), `_is_cpu and _cpu_has_amx_support and` (the AMX store "
    "needs SGLANG_USE_CPU_ENGINE=1 and a CPU with AMX, which this one lacks: the module's "
    "`_cpu_has_amx_support` is False here), `_is_hip and` (the HIP DSA FP8 store)"
)
_LAYOUT_ORDER = (
    '`==` to `>`, `>=` or `is` against "vectorized_5d": every pool built here has the "nhd" '
    "layout, for which all four are False; only aiter's 5-D pool (ROCm: the census measured "
    "that it does not construct here) has the layout where they differ"
)
_FULL_LOC_LONGER = (
    "KVWriteLoc's cut of a full_loc longer than its loc (a piecewise or DP-padded layer that "
    "narrows loc after the metadata resolved full_loc): kvh hands full_loc as long as loc"
)
_MIXED_QUANT = (
    "which quant method a hybrid pool reports when its sides carry different ones (the first "
    "that is not unquantized): kvh builds both sides of a hybrid pool with one dtype, so each "
    "pool has one method and every mutated test returns it"
)
_LOC_CUT = (
    "`!=` to `>`, `>=` or `is not` in KVWriteLoc's cut of swa_loc or full_loc to the loc's "
    "length: slicing a tensor to a length it does not exceed returns it whole, so cutting where "
    "the lengths differ, where the other loc is longer, where it is at least as long, or where "
    "the two lengths are not one int object gives the same locs"
)
_MASK_NONZERO = (
    "`!= 0` to `> 0` on the masked DCP kernel's mask: it is a bool tensor, loaded as 0 or 1, "
    "where the two agree"
)
_NAME_IDENTITY = (
    '`!=` to `is not` against "unquantized": every quant method\'s name is a class attribute '
    "written as a literal (fp4_kv_cache_quant_method.py 350, 390, 449, 778), and CPython interns "
    "identifier-like string constants, so equal names are one object and the two agree"
)
_EMPTY_ROPE = (
    "`> 0` to `!= 0` or `>= 0` on the rope part's numel(): a numel is never negative, and a "
    "rope with no element converted to another dtype or viewed as the store dtype still has no "
    "element, so the scatter writes the same bytes"
)
_GRID_N = (
    "`>=` to `==` or `>` in the masked DCP kernel's `if pid >= N: return`: it is launched on a "
    "grid of exactly N programs (memory_pool.py 2942, `[(N,)]`), so pid < N in every program "
    "and all three guards are False"
)
_GRID_N_IS = (
    "`>=` to `is` in the masked DCP kernel's `if pid >= N`: in the Triton interpreter this "
    "machine runs, pid is a tensor and never the int N, so the guard is False as the original's "
    "is on its grid of N programs; whether compiled Triton accepts `is` there is a GPU question"
)
_NVFP4_SCALES = (
    "the per-layer global scales of a quant method with k_scales_gpu, which only "
    "NVFP4KVCacheMethod has (fp4_kv_cache_quant_method.py 468); the census measured that "
    "NVFP4's quantiser needs SM90+ (harness/sut/probe/write_doors.py), so kvh's quant methods "
    "lack it and the `and` is False whichever test of k_scale comes first"
)
_V_ROW_DIM = (
    "v_row_dim's default: every caller of _set_kv_buffer_impl passes v_row_dim (a None would "
    "raise at `v_row_dim * store_dtype.itemsize`), so the mutant sets it to row_dim; it is read "
    "only by the CUDA store_cache, XPU and AMX branches (memory_pool.py 175-205), never by a "
    "CPU's indexed assignment"
)
_JIT_STORE = (
    "the CUDA store_cache test `(_is_cuda or _is_hip) and can_use_store_cache(...)` with its "
    "flags negated, joined by `and` or the test joined by `or`: on a CPU both flags are False, "
    "and can_use_store_cache, where it is called, tries to build the CUDA JIT kernel, fails and "
    "returns False (kernels/ops/kvcache/kvcache.py 52-66), so the indexed assignment runs as "
    "before; on a CUDA machine the mutants would skip store_cache"
)
_CPU_ENGINE_FLAGS = (
    "the AMX store's test `_is_cpu and _cpu_has_amx_support and ...` with `_is_cpu` negated or "
    "joined by `or`: `_is_cpu` is SGLang's CPU-engine switch (utils/common.py 221-224: "
    "SGLANG_USE_CPU_ENGINE=1), which kvh leaves unset, and this CPU has no AMX, so both tests "
    "are False; a CPU engine on an AMX machine would take torch.ops.sgl_kernel.store_cache_cpu"
)
_MLA_DCP = (
    "the MLA pool's decode-context-parallel rule (write_loc_is_dcp_resolved, dcp_replicated): "
    "kvh builds its MLA pools at a DCP size of 1, where a widened loc spans one row and the "
    "sharded scatter writes as the plain one; a DCP rank's MLA pool would tell them apart (the "
    "door campaign's MLA DCP gap)"
)
MLA_DCP_CLOSED = (
    "session 17: the mla kind as a DCP rank's pool (dcp_size, dcp_rank; the release's group "
    "stated with get_parallel().override, harness/sut/load/dcp_rank.py), written by "
    "flashinfer_mla_dcp in the dcp-rank scenarios and the dcp strategy"
)
MLA_DCP_RESOLVED = (
    "`or` to `and` between write_loc_is_dcp_resolved and dcp_replicated, under an enabled DCP "
    "group: the two differ only for a pool that is one of them, the unified MLA pool (its plan "
    "resolves the widened loc through allocators kvh does not build, so kvh's unified kinds are "
    "not DCP ranks) or a DSA pool of a model whose loc space is widened (kv_cache_configurator "
    "2366); kvh's MLA DCP rank is the plain MLA pool's, neither"
)
_DCP_SPAN = (
    "_write_loc_dcp_span, how many ids one row spans: read only by the out-of-bounds probe's "
    "bound in set_mla_kv_buffer (the probe returns before its bounds unless "
    "SGLANG_ENABLE_ASYNC_ASSERT is set: the probe-on gap) and by the read-index translation of "
    "the pool's loc-taking reads (5094-5117), which kvh's snapshot, reading get_key_buffer "
    "whole, does not take"
)
_ONE_RANK_SELECTION = (
    "`> 1` to `!= 1`, `>= 1` or `> 0` on the naive scatter's DCP size: it differs only at a "
    "size of 1, where the selection `loc % 1 == 0` keeps every loc, as no selection does (a "
    "size is never below 1)"
)
_MLA_DSA = (
    "the MLA pool's DSA branches (use_dsa, dsa_kv_cache_store_fp8, and the HIP DSA FP8 store): "
    "the campaign's universe builds no DSA pool (kvh's DSA kinds run the census-checked dsa "
    "model), so use_dsa is False on every pool it writes and each mutated test agrees"
)
_QUANT_FALLTHROUGH = (
    "`continue` to `break` past a pool with no quant method in get_kv_cache_quant_method: only "
    "a composite pool's own entry has none (SWAKVPool keeps its methods on its sub-pools), and "
    "kvh asks no composite pool for its quant method: flashinfer's __init__, which does "
    "(flashinfer_backend.py 351), is not run by its driver"
)
_CPU_FP8_READER = (
    "`and` to `or` in the K/V reader's dequantizing test: only a quantized pool differs, and "
    "kvh reads the CPU FP8 pool's buffers as storage attributes (pools/kinds/layout.py), not "
    "through get_key_buffer / get_value_buffer, so a reader that dequantizes where the release "
    "hands the raw fp8 rows goes unseen"
)
_ONE_DIMENSIONAL_LOC = (
    "`shape[0]` to `shape[-1]` in KVWriteLoc's cut: a loc, swa_loc and full_loc are "
    "one-dimensional, so the two name the same length"
)
_MLA_SCATTER_SPLIT = (
    "the CPU platform's choice of mla_buffer.py's torch-native scatter over its Triton kernel "
    "(`supports_triton`, 205): the naive scatter mirrors the kernel (its docstring, 131-136), "
    "and at the DCP size and rank kvh's pools have (1, 0) the interpreted kernel writes the "
    "same bytes, as every check of the swapped mutants measured"
)
_TRITON_RANK = (
    "the rank set_mla_kv_buffer_triton hands its scatter at a DCP size of 1: the Triton kernel "
    "tests `loc % DCP_WORLD_SIZE == DCP_RANK` even then (mla_buffer.py 42), so a rank of 1 or "
    "-1 writes nothing there, but the CPU platform (supports_triton False) takes the naive "
    "scatter, which reads the rank only above a DCP size of 1 (152-153)"
)
_ROW_END = (
    "the end of the naive MLA scatter's rope columns: a row is exactly nope then rope wide "
    "(kv_cache_dim), so an end at or past nope + rope slices the same columns"
)
_TWO_DIMENSIONAL = (
    "`shape[-1]` to `shape[1]` or `shape[+1]` on a tensor the line before reshaped to two "
    "dimensions: both name its last"
)
_KEYWORD_MARKER_MLA = (
    "the keyword-only marker `*` replaced by the positional-only `/` in an MLA scatter's "
    "signature: every caller passes the parameters after it by keyword (mla_buffer.py 204-213, "
    "300-308, 321-329) and the ones before it by position, which both signatures accept"
)
_NEGATIVE_LOC = (
    "`loc != reserved_skip_index` to `loc > reserved_skip_index`: the two differ only for a "
    "negative loc, which torch's indexing wraps; kvh's release scenarios hand no negative loc"
)
_SMALL_ROPE = (
    "the rope part's `numel() > 0` moved to `> 1`, `>= 0` or `> -1` in the naive scatter: a "
    "rope of no element or of one element is told apart, and kvh hands no rope at all where "
    "the rope width is 0 (scenarios/materialize.py) and never a one-element one"
)
SURVIVORS_0_5_23_FULL: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, _KEYWORD_MARKER, (
        (_M + "ReplaceBinaryOperator_Mul_Div:20", "/,"),
        (_M + "ReplaceBinaryOperator_Mul_Div:21", "/,"),
    ))
    + alike(RELEASE, EQUIVALENT, _CHUNK_BITS, (
        (_M + "ReplaceBinaryOperator_Add_BitOr:82", "idx = c * CHUNK | offs"),
        (_M + "ReplaceBinaryOperator_Add_BitXor:82", "idx = c * CHUNK ^ offs"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _CUDA_SIZE_LIMIT, (
        (_M + "ReplaceBinaryOperator_Add_BitAnd:38", "size_limit=self.size & self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_BitOr:38", "size_limit=self.size | self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_BitXor:38", "size_limit=self.size ^ self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_Div:38", "size_limit=self.size / self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_FloorDiv:38", "size_limit=self.size // self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_LShift:38", "size_limit=self.size << self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_Mul:38", "size_limit=self.size * self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_Pow:38", "size_limit=self.size ** self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_RShift:38", "size_limit=self.size >> self.page_size,"),
        (_M + "ReplaceBinaryOperator_Add_Sub:38", "size_limit=self.size - self.page_size,"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _CUDA_ROW_BYTES, (
        (_M + "ReplaceBinaryOperator_Mul_Add:3", "row_bytes = row_dim + store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitAnd:3", "row_bytes = row_dim & store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitOr:3", "row_bytes = row_dim | store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitXor:3", "row_bytes = row_dim ^ store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Div:3", "row_bytes = row_dim / store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_FloorDiv:3", "row_bytes = row_dim // store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_LShift:3", "row_bytes = row_dim << store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Mod:3", "row_bytes = row_dim % store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Pow:3", "row_bytes = row_dim ** store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_RShift:3", "row_bytes = row_dim >> store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Sub:3", "row_bytes = row_dim - store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Add:4", "v_row_bytes = v_row_dim + store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitAnd:4", "v_row_bytes = v_row_dim & store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitOr:4", "v_row_bytes = v_row_dim | store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_BitXor:4", "v_row_bytes = v_row_dim ^ store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Div:4", "v_row_bytes = v_row_dim / store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_FloorDiv:4", "v_row_bytes = v_row_dim // store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Mod:4", "v_row_bytes = v_row_dim % store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Pow:4", "v_row_bytes = v_row_dim ** store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_RShift:4", "v_row_bytes = v_row_dim >> store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Mul_Sub:4", "v_row_bytes = v_row_dim - store_dtype.itemsize"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _FLAG_SHORT_CIRCUIT, (
        (_M + "ReplaceComparisonOperator_Eq_Gt:1", "if _is_xpu and v_row_dim > row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_GtE:1", "if _is_xpu and v_row_dim >= row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Is:1", "if _is_xpu and v_row_dim is row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_IsNot:1", "if _is_xpu and v_row_dim is not row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Lt:1", "if _is_xpu and v_row_dim < row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_LtE:1", "if _is_xpu and v_row_dim <= row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_NotEq:1", "if _is_xpu and v_row_dim != row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Gt:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim > row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_GtE:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim >= row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Is:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim is row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_IsNot:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim is not row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Lt:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim < row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_LtE:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim <= row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_NotEq:2", "if _is_cpu and _cpu_has_amx_support and v_row_dim != row_dim:"),
        (_M + "ReplaceComparisonOperator_Eq_Gt:58", "if _is_hip and self.use_dsa and self.dtype > fp8_dtype:"),
        (_M + "ReplaceComparisonOperator_Eq_GtE:58", "if _is_hip and self.use_dsa and self.dtype >= fp8_dtype:"),
        (_M + "ReplaceComparisonOperator_Eq_IsNot:32", "if _is_hip and self.use_dsa and self.dtype is not fp8_dtype:"),
        (_M + "ReplaceComparisonOperator_Eq_Lt:58", "if _is_hip and self.use_dsa and self.dtype < fp8_dtype:"),
        (_M + "ReplaceComparisonOperator_Eq_LtE:58", "if _is_hip and self.use_dsa and self.dtype <= fp8_dtype:"),
        (_M + "ReplaceComparisonOperator_Eq_NotEq:58", "if _is_hip and self.use_dsa and self.dtype != fp8_dtype:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _LAYOUT_ORDER, (
        (_M + "ReplaceComparisonOperator_Eq_Gt:45", "if self.kv_cache_layout > \"vectorized_5d\":"),
        (_M + "ReplaceComparisonOperator_Eq_GtE:45", "if self.kv_cache_layout >= \"vectorized_5d\":"),
        (_M + "ReplaceComparisonOperator_Eq_Is:24", "if self.kv_cache_layout is \"vectorized_5d\":"),
    ))
    + alike(RELEASE, GAP, _FULL_LOC_LONGER, (
        (_M + "ReplaceComparisonOperator_NotEq_Eq:7", "if self.full_loc is not None and self.full_loc.shape[0] == self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_Is:5", "if self.full_loc is not None and self.full_loc.shape[0] is self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_Lt:7", "if self.full_loc is not None and self.full_loc.shape[0] < self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_LtE:7", "if self.full_loc is not None and self.full_loc.shape[0] <= self.loc.shape[0]:"),
    ))
    + alike(RELEASE, GAP, _MIXED_QUANT, (
        (_M + "ReplaceComparisonOperator_NotEq_Eq:8", "if getattr(quant_method, \"name\", None) == \"unquantized\":"),
        (_M + "ReplaceComparisonOperator_NotEq_Gt:8", "if getattr(quant_method, \"name\", None) > \"unquantized\":"),
        (_M + "ReplaceComparisonOperator_NotEq_GtE:8", "if getattr(quant_method, \"name\", None) >= \"unquantized\":"),
        (_M + "ReplaceComparisonOperator_NotEq_Is:6", "if getattr(quant_method, \"name\", None) is \"unquantized\":"),
        (_M + "ReplaceComparisonOperator_NotEq_Lt:8", "if getattr(quant_method, \"name\", None) < \"unquantized\":"),
        (_M + "ReplaceComparisonOperator_NotEq_LtE:8", "if getattr(quant_method, \"name\", None) <= \"unquantized\":"),
        (_M + "AddNot:145", 'if not getattr(quant_method, "name", None) != "unquantized":'),
    ))
    + alike(RELEASE, EQUIVALENT, _LOC_CUT, (
        (_M + "ReplaceComparisonOperator_NotEq_Gt:6", "if self.swa_loc is not None and self.swa_loc.shape[0] > self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_GtE:6", "if self.swa_loc is not None and self.swa_loc.shape[0] >= self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_Gt:7", "if self.full_loc is not None and self.full_loc.shape[0] > self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_GtE:7", "if self.full_loc is not None and self.full_loc.shape[0] >= self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:4", "if self.swa_loc is not None and self.swa_loc.shape[0] is not self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:5", "if self.full_loc is not None and self.full_loc.shape[0] is not self.loc.shape[0]:"),
    ))
    + alike(RELEASE, EQUIVALENT, DTYPE_IDENTITY, (
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:13", "if self.store_dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:14", "if self.store_dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:36", "if cache_k_nope.dtype is not self.dtype:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:37", "if self.store_dtype is not self.dtype:"),
    ))
    + alike(RELEASE, EQUIVALENT, _NAME_IDENTITY, (
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:6", 'if getattr(quant_method, "name", None) is not "unquantized":'),
    ))
    + alike(RELEASE, EQUIVALENT, _EMPTY_ROPE, (
        (_M + "ReplaceComparisonOperator_Gt_NotEq:7", "if cache_k_rope is not None and cache_k_rope.numel() != 0:"),
        (_M + "ReplaceComparisonOperator_Gt_NotEq:8", "if cache_k_rope is not None and cache_k_rope.numel() != 0:"),
        (_M + "ReplaceComparisonOperator_Gt_GtE:7", "if cache_k_rope is not None and cache_k_rope.numel() >= 0:"),
        (_M + "ReplaceComparisonOperator_Gt_GtE:8", "if cache_k_rope is not None and cache_k_rope.numel() >= 0:"),
        (_M + "NumberReplacer:667", "if cache_k_rope is not None and cache_k_rope.numel() > -1:"),
        (_M + "NumberReplacer:669", "if cache_k_rope is not None and cache_k_rope.numel() > -1:"),
        (_K + "ReplaceComparisonOperator_Gt_NotEq:0", "has_rope = cache_k_rope is not None and cache_k_rope.numel() != 0"),
    ))
    + alike(RELEASE, EQUIVALENT, _GRID_N, (
        (_M + "ReplaceComparisonOperator_GtE_Eq:9", "if pid == N:"),
        (_M + "ReplaceComparisonOperator_GtE_Gt:9", "if pid > N:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _GRID_N_IS, (
        (_M + "ReplaceComparisonOperator_GtE_Is:3", "if pid is N:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _NVFP4_SCALES, (
        (_M + "ReplaceComparisonOperator_Is_IsNot:20", 'if k_scale is not None and hasattr(self.quant_method, "k_scales_gpu"):'),
        (_M + "AddNot:231", 'if not k_scale is None and hasattr(self.quant_method, "k_scales_gpu"):'),
    ))
    + alike(RELEASE, OUT_OF_REACH, _V_ROW_DIM, (
        (_M + "ReplaceComparisonOperator_Is_IsNot:1", "v_row_dim = row_dim if v_row_dim is not None else v_row_dim"),
        (_M + "AddNot:3", "v_row_dim = row_dim if not v_row_dim is None else v_row_dim"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _JIT_STORE, (
        (_M + "AddNot:4", "if not (_is_cuda or _is_hip) and can_use_store_cache(row_bytes, v_row_bytes):"),
        (_M + "ReplaceAndWithOr:4", "if (_is_cuda or _is_hip) or can_use_store_cache(row_bytes, v_row_bytes):"),
        (_M + "ReplaceOrWithAnd:1", "if (_is_cuda and _is_hip) and can_use_store_cache(row_bytes, v_row_bytes):"),
    ))
    + alike(RELEASE, OUT_OF_REACH, ALT_STREAM, (
        (_M + "ReplaceComparisonOperator_IsNot_Is:0", "if get_is_capture_mode() and alt_stream is None:"),
        (_M + "AddNot:7", "if not get_is_capture_mode() and alt_stream is not None:"),
    ))
    + alike(RELEASE, EQUIVALENT, _MASK_NONZERO, (
        (_M + "ReplaceComparisonOperator_NotEq_Gt:50", "do_write = tl.load(mask_ptr + pid) > 0"),
    ))
    + alike(RELEASE, EQUIVALENT, _ONE_DIMENSIONAL_LOC, (
        (_M + "NumberReplacer:337", "if self.swa_loc is not None and self.swa_loc.shape[ -1] != self.loc.shape[0]:"),
        (_M + "NumberReplacer:339", "if self.swa_loc is not None and self.swa_loc.shape[0] != self.loc.shape[ -1]:"),
        (_M + "NumberReplacer:341", "self.swa_loc = self.swa_loc[: self.loc.shape[ -1]]"),
        (_M + "NumberReplacer:343", "if self.full_loc is not None and self.full_loc.shape[ -1] != self.loc.shape[0]:"),
        (_M + "NumberReplacer:345", "if self.full_loc is not None and self.full_loc.shape[0] != self.loc.shape[ -1]:"),
        (_M + "NumberReplacer:347", "self.full_loc = self.full_loc[: self.loc.shape[ -1]]"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _CPU_ENGINE_FLAGS, (
        (_M + "AddNot:6", "if not _is_cpu and _cpu_has_amx_support and v_row_dim == row_dim:"),
        (_M + "ReplaceAndWithOr:6", "if _is_cpu or _cpu_has_amx_support and v_row_dim == row_dim:"),
    ))
    + alike(RELEASE, GAP, _MLA_DCP, (
        (_M + "AddNot:349", "if not self.write_loc_is_dcp_resolved or self.dcp_replicated:"),
        (_K + "ReplaceComparisonOperator_Gt_Eq:1", "if dcp_world_size == 1:"),
        (_K + "ReplaceComparisonOperator_Gt_Lt:1", "if dcp_world_size < 1:"),
        (_K + "ReplaceComparisonOperator_Gt_LtE:1", "if dcp_world_size <= 1:"),
        (_K + "AddNot:6", "if not dcp_world_size > 1:"),
        (_K + "NumberReplacer:30", "if dcp_world_size > 2:"),
        (_K + "ReplaceBinaryOperator_FloorDiv_Mul:1", "dst = loc[is_valid] * dcp_world_size"),
        (_K + "ReplaceBinaryOperator_FloorDiv_Pow:1", "dst = loc[is_valid] ** dcp_world_size"),
    ), closed_by=MLA_DCP_CLOSED)
    + alike(RELEASE, GAP, MLA_DCP_RESOLVED, (
        (_M + "ReplaceOrWithAnd:27", "if self.write_loc_is_dcp_resolved and self.dcp_replicated:"),
    ))
    + alike(RELEASE, GAP, _DCP_SPAN, (
        (_M + "AddNot:348", "if not self.write_loc_is_dcp_resolved or self.dcp_replicated:"),
        (_M + "ReplaceOrWithAnd:26", "if self.write_loc_is_dcp_resolved and self.dcp_replicated:"),
        (_M + "NumberReplacer:662", "return 2"),
        (_M + "NumberReplacer:663", "return 0"),
    ))
    + alike(RELEASE, EQUIVALENT, _ONE_RANK_SELECTION, (
        (_K + "ReplaceComparisonOperator_Gt_NotEq:1", "if dcp_world_size != 1:"),
        (_K + "ReplaceComparisonOperator_Gt_GtE:1", "if dcp_world_size >= 1:"),
        (_K + "NumberReplacer:31", "if dcp_world_size > 0:"),
    ))
    + alike(RELEASE, GAP, _MLA_DSA, (
        (_M + "AddNot:356", "if not _is_hip and self.use_dsa and self.dtype == fp8_dtype:"),
        (_M + "ReplaceAndWithOr:78", "if _is_hip or self.use_dsa and self.dtype == fp8_dtype:"),
        (_M + "ReplaceOrWithAnd:30", "and (self.use_dsa and self.dsa_kv_cache_store_fp8)"),
    ))
    + alike(RELEASE, GAP, _QUANT_FALLTHROUGH, (
        (_M + "ReplaceContinueWithBreak:3", "break"),
    ))
    + alike(RELEASE, GAP, _CPU_FP8_READER, (
        (_M + "ReplaceAndWithOr:57", "or self.quant_method.needs_plain_kv_dequant_read()"),
        (_M + "ReplaceAndWithOr:58", "or self.quant_method.needs_plain_kv_dequant_read()"),
    ))
    + alike(RELEASE, GAP, _SMALL_ROPE, (
        (_M + "NumberReplacer:666", "if cache_k_rope is not None and cache_k_rope.numel() > 1:"),
        (_M + "NumberReplacer:668", "if cache_k_rope is not None and cache_k_rope.numel() > 1:"),
        (_K + "ReplaceComparisonOperator_Gt_GtE:0", "has_rope = cache_k_rope is not None and cache_k_rope.numel() >= 0"),
        (_K + "NumberReplacer:28", "has_rope = cache_k_rope is not None and cache_k_rope.numel() > 1"),
        (_K + "NumberReplacer:29", "has_rope = cache_k_rope is not None and cache_k_rope.numel() > -1"),
    ))
    + alike(RELEASE, EQUIVALENT, _ROW_END, (
        (_K + "ReplaceBinaryOperator_Add_Mul:21", "rows[dst, nope_dim : nope_dim * rope.shape[-1]] = rope[is_valid]"),
        (_K + "ReplaceBinaryOperator_Add_Pow:21", "rows[dst, nope_dim : nope_dim ** rope.shape[-1]] = rope[is_valid]"),
        (_K + "ReplaceBinaryOperator_Add_LShift:21", "rows[dst, nope_dim : nope_dim << rope.shape[-1]] = rope[is_valid]"),
    ))
    + alike(RELEASE, EQUIVALENT, _TWO_DIMENSIONAL, (
        (_K + "ReplaceUnaryOperator_USub_UAdd:2", "nope_dim = nope.shape[+1]"),
        (_K + "ReplaceUnaryOperator_USub_UAdd:4", "rows[dst, nope_dim : nope_dim + rope.shape[+1]] = rope[is_valid]"),
        (_K + "ReplaceUnaryOperator_Delete_USub:2", "nope_dim = nope.shape[1]"),
        (_K + "ReplaceUnaryOperator_Delete_USub:4", "rows[dst, nope_dim : nope_dim + rope.shape[1]] = rope[is_valid]"),
    ))
    + alike(RELEASE, EQUIVALENT, _KEYWORD_MARKER_MLA, (
        (_K + "ReplaceBinaryOperator_Mul_Div:9", "/,"),
        (_K + "ReplaceBinaryOperator_Mul_Div:13", "/,"),
        (_K + "ReplaceBinaryOperator_Mul_Div:14", "/,"),
    ))
    + alike(RELEASE, GAP, _NEGATIVE_LOC, (
        (_K + "ReplaceComparisonOperator_NotEq_Gt:1", "is_valid = loc > reserved_skip_index"),
    ))
    + alike(RELEASE, EQUIVALENT, _MLA_SCATTER_SPLIT, (
        (_K + "ReplaceUnaryOperator_Delete_Not:0", "if  current_platform.capabilities.supports_triton:"),
        (_K + "AddNot:8", "if not not current_platform.capabilities.supports_triton:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _TRITON_RANK, (
        (_K + "NumberReplacer:68", "dcp_rank= 1,"),
        (_K + "NumberReplacer:69", "dcp_rank= -1,"),
    ))
)  # fmt: skip
