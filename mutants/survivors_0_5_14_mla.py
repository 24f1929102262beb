"""The survivors of 0.5.14's whole-scope campaign in its MLA scatter (mem_cache/triton_ops/
mla_buffer.py: set_mla_kv_buffer_triton and its Triton kernel, interpreted on this machine) and
the next_power_of_2 that sizes the kernel's block, each read against the release. Line numbers
are 0.5.14's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    EQUIVALENT,
    GAP,
    MUL_REPLACED,
    OUT_OF_REACH,
    Survivor,
    alike,
)
from mutants.survivors_0_5_14 import RELEASE

_MLA_K = "srt/mem_cache/triton_ops/mla_buffer.py:core/"
_COMMON = "srt/utils/common.py:core/"

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

SURVIVORS_0_5_14_MLA: tuple[Survivor, ...] = (
    alike(RELEASE, GAP, SMALL_ROPE, (
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
)  # fmt: skip
