"""The full campaign over 0.5.23's whole scope (docs/mutation/sglang-0.5.23-scope.json): the
records of the mutants it judged that survived, each read against the release (the stretches no
check runs are in mutants/stretches_0_5_23.py). Line numbers
are 0.5.23's; the seeded sample's records are in mutants/survivors_0_5_23_scope.py."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    EQUIVALENT,
    GAP,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)
from mutants.survivors_0_5_23_scope import ALT_STREAM, ATTENTION_OUTPUT, DENSE_FP8_PREFILL

RELEASE = "sglang==0.5.23"
_FA3 = "srt/layers/attention/flashattention_backend.py:core/"
_TRITON = "srt/layers/attention/triton_backend.py:core/"
_FLASHINFER = "srt/layers/attention/flashinfer_backend.py:core/"
_M = "srt/mem_cache/memory_pool.py:core/"
_K = "kernels/ops/kvcache/mla_buffer.py:core/"
_R = "srt/runtime_context.py:core/"
_TORCH_NATIVE = "srt/layers/attention/torch_native_backend.py:core/"
# Every operator cosmic-ray puts in place of `==`.
_EQ_REPLACED = (
    ("NotEq", "!="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="), ("Is", "is"),
    ("IsNot", "is not"),
)  # fmt: skip
# Every operator cosmic-ray puts in place of `*` whose result stays an int for ints.
_MUL_INT_REPLACED = (
    ("Add", "+"), ("Sub", "-"), ("FloorDiv", "//"), ("Mod", "%"), ("Pow", "**"),
    ("LShift", "<<"), ("RShift", ">>"), ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
)  # fmt: skip


CP_WRITE = (
    "the context-parallel write (is_cp_active): get_cp_strategy().materialize_full_kv / "
    "materialize_full_mla_kv all-gathers k and v across CP ranks before it writes; kvh drives "
    "no CP rank in a backend's forward (its CP write is judged by `kvh cp` through the model, "
    "docs/distributed.md), so no check reaches it"
)
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
    "`and` to `or` in the forward's decision to write: kvh always calls the forward with "
    "save_kv_cache=True (and k given), where both agree; a forward told not to save (a layer "
    "whose K/V another layer wrote) is not driven"
)
_RAGGED_ATTENTION = (
    "the ragged prefill's attention: causal and the choice between the no-prefix ragged wrapper "
    "and the ragged-plus-paged merge decide only the attention output o; the write at 1505-1516 "
    "reads k, v and the loc, not them"
)
_ENUM_IDENTITY = (
    "`==` replaced by `is` between AttentionType members: an Enum keeps one object per member, "
    "so the two agree on every pair"
)
_ENCODER_ONLY = (
    "the test that skips the write for an encoder-only layer of a model that is not a diffusion "
    "LM: kvh's layers have no attention type, so both sides of the mutated `not` agree"
)
_WRAPPER_INDEX = (
    "which prefill or decode wrapper a layer's attention runs with: the wrapper computes the "
    "attention output only; the write does not use it"
)
_OOB_PROBE_ON = (
    "the out-of-bounds probe turned on: it asserts every loc lies in [0, size + page_size), which "
    "each loc kvh hands the doors does; a negative loc, which torch's indexing wraps where the "
    "probe would raise, is not among kvh's release scenarios"
)
_ENV_PARSE = (
    "the handler of an environment value that does not parse: kvh sets none of the release's "
    "environment fields"
)
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
_DTYPE_IDENTITY = (
    "`!=` to `is not` between two torch dtypes: torch keeps one dtype object per dtype "
    "(torch.bfloat16 is torch.bfloat16), so the two agree on every pair"
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
_PARALLEL_LOOKUP = (
    "the parallel context's lookup of a name it was not stamped with: kvh stamps the DCP names "
    "the write reads (attn_dcp_size, attn_dcp_rank, dcp_enabled: harness/sut/load/"
    "sglang_loader.py _disable_dcp), which return from the stamp before these lines; the "
    "names that do reach them in kvh's checks are not ones the mutated tests tell apart"
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
    "triton's output buffer o (triton_backend.py 1695-1698, 2305-2309) and the width its "
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
SURVIVORS_0_5_23_FULL: tuple[Survivor, ...] = (
    ()
    + alike(RELEASE, EQUIVALENT, _SAVE_DEFAULT, (
        (_FA3 + "ReplaceTrueWithFalse:7", "save_kv_cache=False,"),
        (_FA3 + "ReplaceTrueWithFalse:13", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:12", "save_kv_cache=False,"),
        (_FLASHINFER + "ReplaceTrueWithFalse:14", "save_kv_cache=False,"),
    ))
    + alike(RELEASE, EQUIVALENT, _DEBUG_DECORATOR, (
        (_FLASHINFER + "RemoveDecorator:5", ""),
        (_FLASHINFER + "RemoveDecorator:6", ""),
    ))
    + alike(RELEASE, EQUIVALENT, _ENUM_IDENTITY, (
        (_FLASHINFER + "ReplaceComparisonOperator_Eq_Is:14", "if not self.is_dllm_model and layer.attn_type is AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, EQUIVALENT, _KEYWORD_MARKER, (
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
    + alike(RELEASE, GAP, _SAVE_FALSE, (
        (_FA3 + "ReplaceAndWithOr:46", "if save_kv_cache or not self.fa_skip_kv_cache:"),
        (_FLASHINFER + "ReplaceAndWithOr:37", "if k is not None or save_kv_cache:"),
    ))
    + alike(RELEASE, GAP, K_READ_BACK, (
        (_FLASHINFER + "AddNot:91", "if not k is None and v is None:"),
        (_FLASHINFER + "ReplaceAndWithOr:40", "if k is None or v is None:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:14", "if k is not None and v is None:"),
        (_FLASHINFER + "ReplaceComparisonOperator_Is_IsNot:15", "if k is None and v is not None:"),
    ))
    + alike(RELEASE, GAP, _ENCODER_ONLY, (
        (_FLASHINFER + "AddNot:94", "if not not self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
        (_FLASHINFER + "ReplaceUnaryOperator_Delete_Not:21", "if  self.is_dllm_model and layer.attn_type == AttentionType.ENCODER_ONLY:"),
    ))
    + alike(RELEASE, GAP, CP_WRITE, (
        ("srt/layers/cp/base.py:core/AddNot:12", "if not _STRATEGY is None:"),
        ("srt/layers/cp/base.py:core/ReplaceComparisonOperator_Is_IsNot:0", "if _STRATEGY is not None:"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceFalseWithTrue:9", "def is_context_parallel_extend(self, include_draft_extend_v2: bool = True):"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Gt:8", "self > ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_GtE:8", "self >= ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Is:8", "self is ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_IsNot:8", "self is not ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Lt:8", "self < ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_LtE:8", "self <= ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_NotEq:8", "self != ForwardMode.EXTEND"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Gt:9", "or self > ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_GtE:9", "or self >= ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Is:9", "or self is ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_IsNot:9", "or self is not ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Lt:9", "or self < ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_LtE:9", "or self <= ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_NotEq:9", "or self != ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceOrWithAnd:8", "and self == ForwardMode.MIXED"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceOrWithAnd:9", "and ("),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Gt:10", "self > ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_GtE:10", "self >= ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Is:10", "self is ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_IsNot:10", "self is not ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_Lt:10", "self < ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_LtE:10", "self <= ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceComparisonOperator_Eq_NotEq:10", "self != ForwardMode.DRAFT_EXTEND_V2"),
        ("srt/model_executor/forward_batch_info.py:core/AddNot:12", "if not include_draft_extend_v2"),
        ("srt/model_executor/forward_batch_info.py:core/ReplaceFalseWithTrue:10", "else True"),
    ))
    + alike(RELEASE, GAP, _OOB_PROBE_ON, (
        ("srt/utils/async_probe.py:core/AddNot:18", "if not not envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
        ("srt/utils/async_probe.py:core/ReplaceUnaryOperator_Delete_Not:8", "if  envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
    ))
    + alike(RELEASE, GAP, _ENV_PARSE, (
        ("srt/environ.py:core/ExceptionReplacer:1", "except CosmicRayTestingException as e:"),
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
    ))
    + alike(RELEASE, EQUIVALENT, _LOC_CUT, (
        (_M + "ReplaceComparisonOperator_NotEq_Gt:6", "if self.swa_loc is not None and self.swa_loc.shape[0] > self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_GtE:6", "if self.swa_loc is not None and self.swa_loc.shape[0] >= self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_Gt:7", "if self.full_loc is not None and self.full_loc.shape[0] > self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_GtE:7", "if self.full_loc is not None and self.full_loc.shape[0] >= self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:4", "if self.swa_loc is not None and self.swa_loc.shape[0] is not self.loc.shape[0]:"),
        (_M + "ReplaceComparisonOperator_NotEq_IsNot:5", "if self.full_loc is not None and self.full_loc.shape[0] is not self.loc.shape[0]:"),
    ))
    + alike(RELEASE, EQUIVALENT, _DTYPE_IDENTITY, (
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
    ))
    + alike(RELEASE, OUT_OF_REACH, _V_ROW_DIM, (
        (_M + "ReplaceComparisonOperator_Is_IsNot:1", "v_row_dim = row_dim if v_row_dim is not None else v_row_dim"),
        (_M + "AddNot:3", "v_row_dim = row_dim if not v_row_dim is None else v_row_dim"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _JIT_STORE, (
        (_M + "AddNot:4", "if not (_is_cuda or _is_hip) and can_use_store_cache(row_bytes, v_row_bytes):"),
    ))
    + alike(RELEASE, OUT_OF_REACH, ALT_STREAM, (
        (_M + "ReplaceComparisonOperator_IsNot_Is:0", "if get_is_capture_mode() and alt_stream is None:"),
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
    ))
    + alike(RELEASE, OUT_OF_REACH, _CPU_ENGINE_FLAGS, (
        (_M + "AddNot:6", "if not _is_cpu and _cpu_has_amx_support and v_row_dim == row_dim:"),
        (_M + "ReplaceAndWithOr:6", "if _is_cpu or _cpu_has_amx_support and v_row_dim == row_dim:"),
    ))
    + alike(RELEASE, GAP, _MLA_DCP, (
        (_M + "AddNot:348", "if not self.write_loc_is_dcp_resolved or self.dcp_replicated:"),
        (_M + "AddNot:349", "if not self.write_loc_is_dcp_resolved or self.dcp_replicated:"),
        (_M + "ReplaceOrWithAnd:26", "if self.write_loc_is_dcp_resolved and self.dcp_replicated:"),
        (_M + "ReplaceOrWithAnd:27", "if self.write_loc_is_dcp_resolved and self.dcp_replicated:"),
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
    + alike(RELEASE, GAP, _MIXED_QUANT, (
        (_M + "AddNot:145", 'if not getattr(quant_method, "name", None) != "unquantized":'),
    ))
    + alike(RELEASE, OUT_OF_REACH, _NVFP4_SCALES, (
        (_M + "AddNot:231", 'if not k_scale is None and hasattr(self.quant_method, "k_scales_gpu"):'),
    ))
    + alike(RELEASE, OUT_OF_REACH, ALT_STREAM, (
        (_M + "AddNot:7", "if not get_is_capture_mode() and alt_stream is not None:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _JIT_STORE, (
        (_M + "ReplaceAndWithOr:4", "if (_is_cuda or _is_hip) or can_use_store_cache(row_bytes, v_row_bytes):"),
        (_M + "ReplaceOrWithAnd:1", "if (_is_cuda and _is_hip) and can_use_store_cache(row_bytes, v_row_bytes):"),
    ))
    + alike(RELEASE, EQUIVALENT, _ONE_DIMENSIONAL_LOC, (
        (_M + "NumberReplacer:347", "self.full_loc = self.full_loc[: self.loc.shape[ -1]]"),
    ))
    + alike(RELEASE, GAP, _MLA_DCP, (
        (_M + "NumberReplacer:662", "return 2"),
        (_M + "NumberReplacer:663", "return 0"),
        (_K + "ReplaceComparisonOperator_Gt_Eq:1", "if dcp_world_size == 1:"),
        (_K + "ReplaceComparisonOperator_Gt_NotEq:1", "if dcp_world_size != 1:"),
        (_K + "ReplaceComparisonOperator_Gt_Lt:1", "if dcp_world_size < 1:"),
        (_K + "ReplaceComparisonOperator_Gt_LtE:1", "if dcp_world_size <= 1:"),
        (_K + "ReplaceComparisonOperator_Gt_GtE:1", "if dcp_world_size >= 1:"),
        (_K + "AddNot:6", "if not dcp_world_size > 1:"),
        (_K + "NumberReplacer:30", "if dcp_world_size > 2:"),
        (_K + "NumberReplacer:31", "if dcp_world_size > 0:"),
        (_K + "ReplaceBinaryOperator_FloorDiv_Mul:1", "dst = loc[is_valid] * dcp_world_size"),
        (_K + "ReplaceBinaryOperator_FloorDiv_Pow:1", "dst = loc[is_valid] ** dcp_world_size"),
    ))
    + alike(RELEASE, EQUIVALENT, _EMPTY_ROPE, (
        (_M + "NumberReplacer:667", "if cache_k_rope is not None and cache_k_rope.numel() > -1:"),
        (_M + "NumberReplacer:669", "if cache_k_rope is not None and cache_k_rope.numel() > -1:"),
        (_K + "ReplaceComparisonOperator_Gt_NotEq:0", "has_rope = cache_k_rope is not None and cache_k_rope.numel() != 0"),
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
    + alike(RELEASE, GAP, _PARALLEL_LOOKUP, (
        (_R + "ReplaceComparisonOperator_IsNot_Is:0", "if config is None and name in config._fields:"),
        (_R + "ReplaceComparisonOperator_Is_IsNot:1", "if config is not None and name in _parallel_config_leaves():"),
        (_R + "AddNot:14", 'if not name.startswith("_"):'),
        (_R + "AddNot:17", "if not config is not None and name in config._fields:"),
        (_R + "AddNot:18", "if not config is None and name in _parallel_config_leaves():"),
        (_R + "ReplaceAndWithOr:2", "if config is not None or name in config._fields:"),
        (_R + "ReplaceAndWithOr:3", "if config is None or name in _parallel_config_leaves():"),
    ))
    # torch_native's output buffer o (289, 352): every operator that keeps its width an int.
    + tuple(
        Survivor(RELEASE, f"{_TORCH_NATIVE}ReplaceBinaryOperator_Mul_{name}:{occurrence}",
                 f"o = q.new_empty((q.shape[0], layer.tp_q_head_num {op} layer.v_head_dim))",
                 OUTSIDE_THE_WRITE, ATTENTION_OUTPUT)
        for name, op in _MUL_INT_REPLACED for occurrence in (1, 3)
    )
    + tuple(
        Survivor(RELEASE, f"{_TORCH_NATIVE}ReplaceBinaryOperator_Mul_{name}:2",
                 f"q = q.reshape(-1, layer.tp_q_head_num {op} layer.qk_head_dim)",
                 OUTSIDE_THE_WRITE, _DECODE_QUERY)
        for name, op in _MUL_INT_REPLACED
    )
    + alike(RELEASE, OUTSIDE_THE_WRITE, ATTENTION_OUTPUT, tuple(
        (f"{_TORCH_NATIVE}ReplaceComparisonOperator_NotEq_{name}:{occurrence}",
         f"if layer.qk_head_dim {op} layer.v_head_dim:")
        for name, op in (("Eq", "=="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="),
                         ("Is", "is"), ("IsNot", "is not"))
        for occurrence in (0, 2)
    ) + (
        (_TORCH_NATIVE + "AddNot:12", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "AddNot:17", "if not layer.qk_head_dim != layer.v_head_dim:"),
        (_TORCH_NATIVE + "NumberReplacer:94", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:104", "o = q.new_empty((q.shape[ 1], layer.tp_q_head_num * layer.v_head_dim))"),
        (_TORCH_NATIVE + "NumberReplacer:105", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
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
    + alike(RELEASE, EQUIVALENT, _SAVE_DEFAULT, (
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:0", "save_kv_cache=False,"),
        (_TORCH_NATIVE + "ReplaceTrueWithFalse:2", "save_kv_cache=False,"),
    ))
    + alike(RELEASE, GAP, _SAVE_FALSE, (
        (_TORCH_NATIVE + "ReplaceAndWithOr:4", "if save_kv_cache or k is not None and v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:5", "if save_kv_cache and k is not None or v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:9", "if save_kv_cache or k is not None and v is not None:"),
        (_TORCH_NATIVE + "ReplaceAndWithOr:10", "if save_kv_cache and k is not None or v is not None:"),
    ))
    + tuple(
        Survivor(RELEASE, f"{_TRITON}ReplaceBinaryOperator_Mul_{name}:{occurrence}",
                 f"o = q.new_empty((q.shape[0], layer.tp_q_head_num {op} layer.v_head_dim))",
                 OUTSIDE_THE_WRITE, _TRITON_OUTPUT)
        for name, op in _MUL_INT_REPLACED for occurrence in (14, 22)
    )
    + tuple(
        Survivor(RELEASE, f"{_TRITON}ReplaceBinaryOperator_Mul_{name}:21",
                 f"q = q.reshape(-1, layer.tp_q_head_num {op} layer.qk_head_dim)",
                 OUTSIDE_THE_WRITE, _TRITON_OUTPUT)
        for name, op in _MUL_INT_REPLACED
    )
    # The dense FP8 prefill test's operands after its first (triton_backend.py 1511-1517).
    + tuple(
        Survivor(RELEASE, f"{_TRITON}ReplaceComparisonOperator_Eq_{name}:{occurrence}",
                 f"and {operand} {op} {value}", OUT_OF_REACH, DENSE_FP8_PREFILL)
        for occurrence, operand, value in (
            (11, "q.dtype", "torch.float8_e4m3fn"), (12, "k.dtype", "torch.float8_e4m3fn"),
            (13, "v.dtype", "torch.float8_e4m3fn"), (14, "layer.tp_q_head_num", "12"),
            (15, "layer.tp_k_head_num", "12"), (16, "layer.qk_head_dim", "192"),
            (17, "layer.v_head_dim", "128"),
        )
        for name, op in _EQ_REPLACED
        if name not in ("Is", "IsNot")
    )
    # `is` and `is not` are numbered apart, and not put against a literal (1514-1517).
    + tuple(
        Survivor(RELEASE, f"{_TRITON}ReplaceComparisonOperator_Eq_{name}:{occurrence}",
                 f"and {operand} {op} torch.float8_e4m3fn", OUT_OF_REACH, DENSE_FP8_PREFILL)
        for occurrence, operand in ((5, "q.dtype"), (6, "k.dtype"), (7, "v.dtype"))
        for name, op in (("Is", "is"), ("IsNot", "is not"))
    )
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
    # The test choosing triton's output buffer's shape (1695, 2305).
    + tuple(
        Survivor(RELEASE, f"{_TRITON}ReplaceComparisonOperator_NotEq_{name}:{occurrence}",
                 f"{keyword} layer.qk_head_dim {op} layer.v_head_dim:", OUTSIDE_THE_WRITE,
                 _TRITON_OUTPUT)
        for occurrence, keyword in ((5, "elif"), (7, "if"))
        for name, op in (("Eq", "=="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="))
    )
)  # fmt: skip
