"""The survivors of 0.5.14's whole-scope campaign beyond its write doors (the doors' records:
mutants/survivors_0_5_14.py), each read against the release: FA3's and flashinfer's forwards
before their write, the out-of-bounds probe, the environment's fields. Line numbers are 0.5.14's;
where a reason is 0.5.23's too, its text says so."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
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
SMALL_ROPE = (
    "an MLA row whose rope part has no or one element: the scatter's BLOCK sized from "
    "nope_dim * rope_dim (mla_buffer.py 138), the rope mask bound nope_dim * rope_dim (56) and "
    "the kernel's fast path for a tile of nope alone (39-44, a power-of-two nope with no rope; "
    "its test as `<` or `is`) differ from the release's only there. kvh's MLA "
    "geometries have one rope-less shape, (512, 0) (scenarios/strategies/geometry.py "
    "MLA_SHAPES), drawn at ci by chance; its builtin scenarios and the ci draws on these cells "
    "did not take it, and no shape has a rope of one element"
)
_ONE_TILE = (
    "the MLA scatter's tile offset (mla_buffer.py 27, 28 and 39): its grid is (n_loc, 1) "
    "(set_mla_kv_buffer_triton, 140), so pid_blk is 0 and base is 0, and 0 // BLOCK, "
    "0 % BLOCK, 0 >> BLOCK, 0 << BLOCK, 0 & BLOCK, 0 | x and 0 ^ x are what 0 * BLOCK and "
    "0 + x are"
)
_INTERPRETED_BOOLS = (
    "another operator for `&` between the MLA scatter's boolean masks, or an `is not` in them "
    "(mla_buffer.py 56, 60 and 65): in the Triton interpreter this machine runs, the masks are "
    "numpy bool arrays (`+` is `or`, `*` is `and`; `/`, `//` and `<<` give values of the same "
    "truth where it matters; `is not` between an array and an int is True), and what they "
    "unmask is a load whose values tl.where then discards (it picks by is_nope) before a store "
    "masked at the row's width, so the same elements are written; what compiled Triton makes "
    "of int1 arithmetic, and of loads past a row it unmasks, only a GPU can say"
)
_ROPE_BOUND = (
    "is_rope's upper bound `offs < nope_dim + rope_dim` (mla_buffer.py 56) as `!=` or `<=`: "
    "is_rope masks only the rope load, together with the row's mask `offs < total_dim`, which "
    "already excludes offs == total_dim, so the load and the written elements are the same"
)
_FAST_PATH_TEST = (
    "the nope-only fast path's test `base + BLOCK <= nope_dim` (mla_buffer.py 39) as `==`, and "
    "the rope-only path's `base >= nope_dim` (45) as `==`: base is 0 (one tile a row) and BLOCK "
    "is a power of two at least the row's width, so `<=` holds only where BLOCK equals nope_dim "
    "and `>=` only where nope_dim is 0, which is where `==` holds too"
)
NO_NOPE = (
    "the rope-only fast path's test `base >= nope_dim` (mla_buffer.py 45) as `>` or `is`: base "
    "is 0, so they differ from it only for an MLA row with no nope part, which no MLA model "
    "has and kvh's MLA geometries do not draw"
)
_TMA_LOCS = (
    "the TMA bulk-store test's loc count `n_loc >= _TMA_BULK_STORE_MIN_LOCS` (mla_buffer.py "
    "124): its next operand, is_arch_support_pdl(), is False on a CPU, so whatever the count "
    "compares to, the Triton scatter runs"
)
_DISJOINT_WIDTHS = (
    "`|` or `^` for `+` between the nope and rope widths (mla_buffer.py 29, 56 and 138): they "
    "agree wherever the two widths share no bit, as every MLA shape kvh draws does (512, 528 "
    "or 256 with 64, 32 or 0: scenarios/strategies/geometry.py MLA_SHAPES); a latent whose "
    "widths share one (448 with 64) would tell them apart"
)
_ROPE_NOT_WIDER = (
    "the rope load's offset `offs % nope_dim` for `offs - nope_dim` (mla_buffer.py 64): for the "
    "rope's offsets (nope_dim up to nope_dim + rope_dim, the others masked) the two agree "
    "wherever the rope is no wider than the nope, as in every MLA shape kvh draws; a rope wider "
    "than its latent's nope would tell them apart"
)
_TMA_WIDTHS = (
    "the byte widths set_mla_kv_buffer_triton hands can_use_set_mla_kv_buffer (mla_buffer.py "
    "121-122), read only by its TMA bulk-store test `n_loc >= 768 and is_arch_support_pdl() "
    "and ...` (SM90+ with PDL): a CPU's is_arch_support_pdl() is False, so they are never read"
)
_PDL = (
    "programmatic dependent launch (mla_buffer.py 141, and the TMA test's `or` after its loc "
    "count, 126): is_arch_support_pdl() is False on a CPU, so the kernel gets no PDL keywords "
    "whatever their values, and can_use_set_mla_kv_buffer, where the mutant calls it, fails to "
    "build its CUDA JIT module and says False; an SM90+ GPU tells them apart"
)
_MANY_LOCS = (
    "the TMA test's first `and` turned `or` (mla_buffer.py 125): it differs only for an MLA "
    "write of 768 locs or more (_TMA_BULK_STORE_MIN_LOCS), which would then take the CUDA JIT "
    "path; kvh's MLA writes are shorter"
)
_HEAD_STRIDE = (
    "stride(1) for stride(0) in the MLA scatter's arguments (mla_buffer.py 147-149): the cache "
    "and the nope and rope parts have one head, (tokens, 1, width), and the tensors kvh hands "
    "(whole or column slices of one tensor) give that size-1 dim the token stride, so the two "
    "agree; a view whose head dim has another stride (a permuted tensor) would tell them apart"
)
_EXTRA_TILE = (
    "the MLA scatter's grid and tile ids (mla_buffer.py 25, 140): a second tile a loc, "
    "(n_loc, 2), starts at BLOCK, past the row's width, where every lane is masked and nothing "
    "is stored; and tl.program_id(2) on a grid of two axes is 0, as program_id(1) is"
)
_MASKED_FILL = (
    "the fill value of the scatter's masked loads (mla_buffer.py 61 and 66): tl.where takes a "
    "nope lane's value from the nope load and a rope lane's from the rope load, both loaded "
    "there, and the lanes past the row are not stored, so no filled lane is written"
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
_ENUM_IDENTITY = (
    "`==` replaced by `is` between AttentionType members: an Enum keeps one object per member, "
    "so the two agree on every pair"
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

_BLOCK_AT_LEAST_A_ROW = (
    "next_power_of_2 on the write path sizes the MLA scatter's BLOCK (mla_buffer.py 139: "
    "`triton.next_power_of_2(total_dim)`, which the release binds to this function; traced in "
    "kvh's run): one tile a row (grid (n_loc, 1)), its elements masked at the row's width. "
    "These mutants return a block at least as wide as the row for every width above 0 (n * 1, "
    "n + 1, n // 1, n ** 1, n << 1, n | 1, n ^ 1, n - 0, 2 << ...), or differ only for a width "
    "of 0 or 1 (`!= 0`, `>= 0`, `> 1`, `> -1`, the else value), where a row has more "
    "elements or the result is 1 alike, so the same elements are written"
)
_BLOCK_SHORT = (
    "next_power_of_2's `(n - 2).bit_length()` for `(n - 1)`: one block short of the row only "
    "for a width of 2^k + 1 (a 64-wide latent with a one-element rope), where the scatter's "
    "single tile would leave the row's last element unwritten; kvh's MLA geometries draw no "
    "such width"
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
    + alike(RELEASE, GAP, SMALL_ROPE, (
        (_MLA_K + "ReplaceBinaryOperator_Add_Mul:10", "is_rope = (offs >= nope_dim) & (offs < (nope_dim * rope_dim))"),
        (_MLA_K + "ReplaceBinaryOperator_Add_Mul:15", "total_dim = nope_dim * rope_dim"),
    ))
    + alike(RELEASE, EQUIVALENT, _ONE_TILE, (
        (_MLA_K + "ReplaceBinaryOperator_Mul_FloorDiv:0", "base = pid_blk // BLOCK"),
        (_MLA_K + "ReplaceBinaryOperator_Mul_Mod:0", "base = pid_blk % BLOCK"),
        (_MLA_K + "ReplaceBinaryOperator_Mul_RShift:0", "base = pid_blk >> BLOCK"),
        (_MLA_K + "ReplaceBinaryOperator_Mul_LShift:0", "base = pid_blk << BLOCK"),
        (_MLA_K + "ReplaceBinaryOperator_Mul_BitAnd:0", "base = pid_blk & BLOCK"),
        (_MLA_K + "ReplaceBinaryOperator_Add_BitOr:0", "offs = base | tl.arange(0, BLOCK)"),
        (_MLA_K + "ReplaceBinaryOperator_Add_BitXor:0", "offs = base ^ tl.arange(0, BLOCK)"),
        (_MLA_K + "ReplaceBinaryOperator_Add_BitOr:5", "if base | BLOCK <= nope_dim:"),
        (_MLA_K + "ReplaceBinaryOperator_Add_BitXor:5", "if base ^ BLOCK <= nope_dim:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _INTERPRETED_BOOLS, tuple(
        (f"{_MLA_K}ReplaceBinaryOperator_BitAnd_{name}:{occurrence}", line.format(symbol))
        for name, symbol in (("Add", "+"), ("Mul", "*"), ("Div", "/"), ("FloorDiv", "//"), ("LShift", "<<"), ("BitOr", "|"))
        for occurrence, line in (
            (0, "is_rope = (offs >= nope_dim) {} (offs < (nope_dim + rope_dim))"),
            (1, "mask=mask {} is_nope,"),
            (2, "mask=mask {} is_rope,"),
        )
    ) + (
        (_MLA_K + "ReplaceComparisonOperator_Lt_IsNot:2", "is_rope = (offs >= nope_dim) & (offs is not (nope_dim + rope_dim))"),
        (_MLA_K + "ReplaceComparisonOperator_GtE_IsNot:1", "is_rope = (offs is not nope_dim) & (offs < (nope_dim + rope_dim))"),
    ))
    + alike(RELEASE, EQUIVALENT, _ROPE_BOUND, (
        (_MLA_K + "ReplaceComparisonOperator_Lt_NotEq:2", "is_rope = (offs >= nope_dim) & (offs != (nope_dim + rope_dim))"),
        (_MLA_K + "ReplaceComparisonOperator_Lt_LtE:2", "is_rope = (offs >= nope_dim) & (offs <= (nope_dim + rope_dim))"),
    ))
    + alike(RELEASE, EQUIVALENT, _FAST_PATH_TEST, (
        (_MLA_K + "ReplaceComparisonOperator_LtE_Eq:0", "if base + BLOCK == nope_dim:"),
        (_MLA_K + "ReplaceComparisonOperator_GtE_Eq:0", "elif base == nope_dim:"),
    ))
    + alike(RELEASE, GAP, SMALL_ROPE, (
        (_MLA_K + "ReplaceComparisonOperator_LtE_Lt:0", "if base + BLOCK < nope_dim:"),
        (_MLA_K + "ReplaceComparisonOperator_LtE_Is:0", "if base + BLOCK is nope_dim:"),
    ))
    + alike(RELEASE, GAP, NO_NOPE, (
        (_MLA_K + "ReplaceComparisonOperator_GtE_Gt:0", "elif base > nope_dim:"),
        (_MLA_K + "ReplaceComparisonOperator_GtE_Is:0", "elif base is nope_dim:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _TMA_LOCS, tuple(
        (f"{_MLA_K}ReplaceComparisonOperator_GtE_{name}:2", f"n_loc {symbol} _TMA_BULK_STORE_MIN_LOCS")
        for name, symbol in (("Eq", "=="), ("NotEq", "!="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("Is", "is"), ("IsNot", "is not"))
    ))
    + alike(RELEASE, GAP, _DISJOINT_WIDTHS, tuple(
        (f"{_MLA_K}ReplaceBinaryOperator_Add_{name}:{occurrence}", line.format(symbol))
        for name, symbol in (("BitOr", "|"), ("BitXor", "^"))
        for occurrence, line in (
            (1, "total_dim = nope_dim {} rope_dim"),
            (10, "is_rope = (offs >= nope_dim) & (offs < (nope_dim {} rope_dim))"),
            (15, "total_dim = nope_dim {} rope_dim"),
        )
    ))
    + alike(RELEASE, GAP, _ROPE_NOT_WIDER, (
        (_MLA_K + "ReplaceBinaryOperator_Sub_Mod:1", "cache_k_rope_ptr + pid_loc * rope_stride + (offs % nope_dim),"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _TMA_WIDTHS, tuple(
        (f"{_MLA_K}ReplaceBinaryOperator_Mul_{name}:{occurrence}", f"{part}_bytes = cache_k_{part}.shape[-1] {symbol} cache_k_{part}.element_size()")
        for occurrence, part in ((6, "nope"), (7, "rope"))
        for name, symbol in MUL_REPLACED
    ) + tuple(
        (f"{_MLA_K}ReplaceUnaryOperator_{operator}:{occurrence}", f"{part}_bytes = cache_k_{part}.shape[{index}] * cache_k_{part}.element_size()")
        for occurrence, part in ((0, "nope"), (1, "rope"))
        for operator, index in (("USub_UAdd", "+1"), ("USub_Invert", "~1"), ("USub_Not", "not 1"), ("Delete_USub", "1"))
    ) + tuple(
        (f"{_MLA_K}NumberReplacer:{occurrence}", f"{part}_bytes = cache_k_{part}.shape[{index}] * cache_k_{part}.element_size()")
        for occurrence, part, index in ((12, "nope", "- 2"), (13, "nope", "- 0"), (14, "rope", "- 2"), (15, "rope", "- 0"))
    ))
    + alike(RELEASE, OUT_OF_REACH, _PDL, (
        (_MLA_K + "ReplaceTrueWithFalse:0", 'pdl_kwargs = {"USE_GDC": False, "launch_pdl": True} if is_arch_support_pdl() else {}'),
        (_MLA_K + "ReplaceTrueWithFalse:1", 'pdl_kwargs = {"USE_GDC": True, "launch_pdl": False} if is_arch_support_pdl() else {}'),
        (_MLA_K + "ReplaceAndWithOr:1", "or can_use_set_mla_kv_buffer(nope_bytes, rope_bytes)"),
    ))
    + alike(RELEASE, GAP, _MANY_LOCS, (
        (_MLA_K + "ReplaceAndWithOr:0", "or is_arch_support_pdl()"),
    ))
    + alike(RELEASE, GAP, _HEAD_STRIDE, (
        (_MLA_K + "NumberReplacer:22", "kv_buffer.stride( 1),"),
        (_MLA_K + "NumberReplacer:24", "cache_k_nope.stride( 1),"),
        (_MLA_K + "NumberReplacer:26", "cache_k_rope.stride( 1),"),
    ))
    + alike(RELEASE, EQUIVALENT, _EXTRA_TILE, (
        (_MLA_K + "NumberReplacer:20", "grid = (n_loc, 2)"),
        (_MLA_K + "NumberReplacer:2", "pid_blk = tl.program_id( 2)"),
    ))
    + alike(RELEASE, EQUIVALENT, _MASKED_FILL, (
        (_MLA_K + "NumberReplacer:6", "other= 1,"),
        (_MLA_K + "NumberReplacer:7", "other= -1,"),
        (_MLA_K + "NumberReplacer:8", "other= 1,"),
        (_MLA_K + "NumberReplacer:9", "other= -1,"),
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
    + alike(RELEASE, EQUIVALENT, _ENUM_IDENTITY, (
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
    + alike(RELEASE, EQUIVALENT, _BLOCK_AT_LEAST_A_ROW, tuple(
        (f"{_COMMON}ReplaceBinaryOperator_Sub_{name}:5", f"return 1 << (n {symbol} 1).bit_length() if n > 0 else 1")
        for name, symbol in (("Mul", "*"), ("Add", "+"), ("FloorDiv", "//"), ("Pow", "**"), ("LShift", "<<"), ("BitOr", "|"), ("BitXor", "^"))
    ) + (
        (_COMMON + "ReplaceComparisonOperator_Gt_NotEq:11", "return 1 << (n - 1).bit_length() if n != 0 else 1"),
        (_COMMON + "ReplaceComparisonOperator_Gt_GtE:11", "return 1 << (n - 1).bit_length() if n >= 0 else 1"),
        (_COMMON + "NumberReplacer:468", "return 2 << (n - 1).bit_length() if n > 0 else 1"),
        (_COMMON + "NumberReplacer:471", "return 1 << (n - 0).bit_length() if n > 0 else 1"),
        (_COMMON + "NumberReplacer:472", "return 1 << (n - 1).bit_length() if n > 1 else 1"),
        (_COMMON + "NumberReplacer:473", "return 1 << (n - 1).bit_length() if n > -1 else 1"),
        (_COMMON + "NumberReplacer:474", "return 1 << (n - 1).bit_length() if n > 0 else 2"),
        (_COMMON + "NumberReplacer:475", "return 1 << (n - 1).bit_length() if n > 0 else 0"),
    ))
    + alike(RELEASE, GAP, _BLOCK_SHORT, (
        (_COMMON + "NumberReplacer:470", "return 1 << (n - 2).bit_length() if n > 0 else 1"),
    ))
    + alike(RELEASE, GAP, _OOB_PROBE_ON, (
        (_PROBE + "ReplaceUnaryOperator_Delete_Not:4", "if  envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
        (_PROBE + "AddNot:10", "if not not envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
    ))
)  # fmt: skip
