"""The scope of 0.5.23 judged again with cp in its universe: the records of its survivors in the
zigzag CP strategy itself (layers/cp/zigzag.py: can_apply, build_metadata, the gather, the
restore), each read against the release; its padding, kind, utilities and the forward context
are in survivors_0_5_23_cp.py, its padding's size and test in survivors_0_5_23_padded.py. Line
numbers are 0.5.23's."""

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

_ZZ = "srt/layers/cp/zigzag.py:core/"

_GROUP_OF_TWO = (
    "a rule that agrees with the release's on kvh run's CP group of two ranks only: cp_size + 2 "
    "for cp_size * 2 (can_apply's 2N at zigzag.py 110 and 119, build_metadata's segment count "
    "at 139) is 4 = 2N for N = 2, and (2N - 1) ^ rank for 2N - 1 - rank (the rank's second "
    "block at 165 and 201) is equal wherever 2N is a power of two; a group of four ranks tells "
    "the first apart and one of three the second. kvh cp --world 4 runs four ranks, outside "
    "this campaign's universe (kvh run's cells)"
)
_CP_THRESHOLD = (
    "can_apply's floor for taking a batch through CP (zigzag.py 110 and 119, 2N = 4 on kvh "
    "run's two ranks) moved: N << 2 = 8, N * 3 or `<=` for `<` (a total of 4 to 7, 4 to 5, or "
    "4 tokens written without CP) or N | 2, N & 2 and N * 1 "
    "and N & 2 = 2 (requests of 2 or 3 tokens taken through CP). Both paths write the same rows; "
    "they differ in whose tensors a scaling pool divides in place (the caller's k and v without "
    "CP, the gathered copies with it), which the caller_tensors oracle compares. kvh's scaled "
    "cp scenarios are small-scaled (requests of 5, 6 and 9: CP under both) and "
    "short-request-scaled (1, 1 and 2: CP under neither); a scaled extend of one request of 4 "
    "to 7 tokens, or of requests of 2 or 3 tokens each, would tell them apart"
)
_INVARIANTS = (
    "build_metadata's closing asserts (zigzag.py 232-237) with `==` weakened to `<=` or `>=`: "
    "each equality holds by construction for every input (2N blocks a request in split_list, "
    "summing to its tokens; two blocks a request in zigzag_index; cp_reverse_index a "
    "permutation of the blocks; the ranks' shares summing to the tokens), so the original "
    "never fails and neither does its weakened form (`is not` between two new lists is always "
    "true)"
)
_LOCAL_LEN = (
    "_all_gather_reorganized's test whether its token counts are the actual ones (zigzag.py "
    "464), `==` as `>`, `>=` or `is` between the lists: the logical counts are never above the "
    "actual ones, so where the lists differ all take the else branch as the release does, and "
    "where they are equal the mutant may take the else branch instead, which cuts x to the rank's own count "
    "(per_rank_token[cp_rank]) where the first keeps all of x's rows; x holds at least that "
    "count (the assert at 468), and the rows past it never leave the gather, which trims each "
    "rank's chunk to its count (chunks[rank][:per_rank_len], 493)"
)
_GATHER_PAD_REMAINDER = (
    "the gather's pad as max_len % L for max_len - L (zigzag.py 470, L the rank's rows): the two "
    "agree wherever max_len < 2L. A rank's share of a request is two of its 2N blocks, of base "
    "or base + 1 rows with base >= 1 (can_apply takes a request only of 2N tokens or more), "
    "and no two ranks differ by more than one row a request (one holding both short blocks "
    "while another holds both long ones would need r >= rem > 2N - 1 - s for ranks r, s < N), "
    "so max_len - L <= bs < 2 * bs <= L for a batch of bs requests"
)
_PAD_WIDTH_3D = (
    "the gather's pad list written [0, 0] * (x.ndim ^ 1) for (x.ndim - 1) (zigzag.py 472): the "
    "write gathers 3-D tensors only (k and v concatenated, or the MLA latent: tokens, heads, "
    "width), where ndim ^ 1 = 2 = ndim - 1; only a 2-D tensor, which gather_hidden_states "
    "passes (the model's hidden states after attention), tells it apart"
)
_SMALL_INTS = (
    "build_metadata's closing asserts (zigzag.py 232-237) with `==` as `is` between two ints: "
    "CPython keeps one object for each int up to 256, so the two agree for kvh's cp batches, "
    "whose counts are small; a batch of more than 256 tokens (233, 237) or 64 requests (232, "
    "234, 235) would make the mutant's assert fail where the release's passes"
)
_GROUP_FLOOR = (
    "can_apply's `cp_size <= 1` (zigzag.py 110) as `== 1`, `< 1` or `<= 0`: the release builds a "
    "ZigzagCPStrategy only for a CP size above 1 (init_cp_strategy, base.py 283), so all three "
    "are False for every strategy that exists"
)
_MODE_TESTED_TWICE = (
    "can_apply's forward-mode test (zigzag.py 113-114): its only caller, is_cp_active "
    "(cp/utils.py 121-135), returns False before calling it unless the batch has a forward "
    "mode that is a context-parallel extend, so the test is always False there, mutated or "
    "not, and its `return False` never runs"
)
_PAD_NEVER_NEGATIVE = (
    "the gather's `if pad_size > 0` (zigzag.py 471) as `!= 0` or `>= 0`: pad_size is never "
    "negative (max_len is the largest of the counts and x is cut to at most its rank's), so "
    "`!= 0` is `> 0`, and `>= 0` (or `> -1`) also pads by zero rows, which F.pad returns as they were"
)
_SYMMETRIC_CUDA = (
    "the symmetric-memory context of the gather (zigzag.py 476-480), entered only for a CUDA "
    "tensor: its arguments are never evaluated on a CPU rank, and the test negated makes a CPU "
    "rank enter it (measured: the same writes) and a CUDA one skip it, a difference on a GPU only"
)
_REVERSE_STOP = (
    "the stop of cp_reverse_index's second range (zigzag.py 189) as -1 for 0: the range counts "
    "down from (2N - 1) * bs + batch_id in steps of 2 * bs, and reaches 0 only if (2N - 1) * bs "
    "were a multiple of 2 * bs, which an odd 2N - 1 never makes it; so it holds the same "
    "blocks with either stop"
)
_ONE_DIM_LOC = (
    "the cut of the SWA loc to the write's rows (zigzag.py 429) by cache_loc.shape[-1] for "
    "shape[0]: cache_loc (the batch's out_cache_loc) is one-dimensional, so the two are one size"
)
_PAD_VALUE = (
    "the value the gather pads a rank's share with (zigzag.py 473), 1 or -1 for 0: after the "
    "gather each rank's chunk is cut to its own count (chunks[rank][:per_rank_len], 493), so "
    "no padding row leaves it, whatever it holds"
)
_ATTENTION_METADATA = (
    "a field of the zigzag metadata that only the attention after the write reads: the kv "
    "lengths of each request's previous and next blocks (kv_len_prev_list, kv_len_next_list, "
    "zigzag.py 204-214, from the prefix offsets of 140-145), the kv lengths' cumulative sums "
    "and the combined lists (224-229) and the int32 tensors and "
    "maxima made of them (the query lengths' maxima at 284-292 among them). run_attention (362-413) and local_q_indices read them (not the query "
    "lengths of 215-216 and their totals of 222-223, which QSA's indexer under CP also reads: "
    "_QUERY_TOTALS); the write reads "
    "only split_list and zigzag_index (shard_hidden_states: the rank's share), total_seq_lens, "
    "per_rank_actual_token (the padding and the gather) and reverse_split_len and "
    "cp_reverse_index (the restore), none of which these lines compute, and kvh's driver stops "
    "the forward once the write door returns (backends/real_code.py). The mutated value still "
    "passes build_metadata's asserts (232-237), which hold only the write's fields"
)
_ZIGZAG_STOP = (
    "the stop of the rank's first blocks in zigzag_index (zigzag.py 173) as cp_rank | X or "
    "cp_rank ^ X for cp_rank + X, X = bs * 2N: the range from cp_rank in steps of 2N takes the "
    "same bs blocks whatever its stop between cp_rank + X - 2N (exclusive) and cp_rank + X, and "
    "both lie in [X - cp_rank, X + cp_rank], inside those bounds for every rank (cp_rank < N), "
    "so no batch or group size tells them apart"
)
_QUERY_TOTALS = (
    "the query lengths of a rank's previous and next blocks (zigzag.py 215-216), whose sums are "
    "total_q_prev_tokens and total_q_next_tokens (222-223, 282-283): under fa3's CP only "
    "run_attention reads them (375-377), after the write; QSA's indexer under CP "
    "(qsa_indexer.py 617) slices its local rows by the totals before it gathers their index "
    "keys into the compressed-K write, and kvh drives QSA's write only without CP"
)
TOKENS_PADDED = (
    "build_metadata's pad_len (zigzag.py 131), num_tokens - sum(extend lengths), as num_tokens "
    "% sum, >> sum or ^ sum, each 0 where the two are equal: kvh hands a CP rank's batch its requests only where they are exactly the rows it "
    "writes (Forward.written_requests), else none (then the batch is one request of num_tokens), "
    "so the two are equal and pad_len is 0 either way; a batch padded past its requests to twice "
    "their tokens or more (a CUDA-graph or DP-padded batch, as _LOC_TRIMMED) would tell them "
    "apart; so would any padded batch (or one short of its requests) the mutants of its test at "
    "132, which with pad_len 0 pad the last request by nothing"
)
# Session 25's cp scenarios (scenarios/defaults.py _cp_batches, the cp backend's extend focus).
CLOSED_BY_FLOOR = (
    "the cp-floor-scaled scenario: scaled extends of one request of 4 tokens (CP), of requests of 2 "
    "and 3 (no CP) and of 3 tokens without their requests (no CP), judged by caller_tensors"
)
CLOSED_BY_WIDE = "the cp-wide-batch scenario: 129 requests of 4 tokens, 516 in all"
CLOSED_BY_PADDED = (
    "the cp-padded-device-lens scenario: two requests of 4 padded by 9 rows, then by one, handed "
    "with their seq_lens alone (Forward.extend_lens_on_host), as a ROCm overlap server's batch"
)
CLOSED_BY_PADDED = (
    "the cp-padded-device-lens scenario: two requests of 4 padded by 9 rows, then by one, handed "
    "with their seq_lens alone (Forward.extend_lens_on_host), as a ROCm overlap server's batch"
)
# cosmic-ray's binary operators, each as it replaces another: where every replacement of one
# operator survives for the same reason, its records are made for all (the campaign's book may
# not hold each; a record of a killed mutant is never read).
_OPERATORS = (
    ("Add", "+"), ("Mul", "*"), ("Div", "/"), ("FloorDiv", "//"), ("Mod", "%"), ("Pow", "**"),
    ("RShift", ">>"), ("LShift", "<<"), ("BitOr", "|"), ("BitAnd", "&"), ("BitXor", "^"),
)  # fmt: skip
# cosmic-ray's replacements of `==` against a name (against the literal 0 it makes no `is`).
_COMPARISONS = EQ_ORDERED + IDENTITY

SURVIVORS_0_5_23_ZIGZAG: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, _ZIGZAG_STOP, (
        (_ZZ + "ReplaceBinaryOperator_Add_BitOr:2", "range(cp_rank, cp_rank | bs * cp_segment_num, cp_segment_num)"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitXor:2", "range(cp_rank, cp_rank ^ bs * cp_segment_num, cp_segment_num)"),
    ))
    + alike(RELEASE, GAP, _QUERY_TOTALS, (
        (_ZZ + "ReplaceBinaryOperator_Sub_Mul:10", "actual_seq_q_next_list.append(block_sizes[cp_segment_num * cp_rank - 1])"),
        (_ZZ + "ReplaceBinaryOperator_Sub_Pow:10", "actual_seq_q_next_list.append(block_sizes[cp_segment_num ** cp_rank - 1])"),
        (_ZZ + "ReplaceBinaryOperator_Sub_RShift:11", "actual_seq_q_next_list.append(block_sizes[cp_segment_num - cp_rank >> 1])"),
        (_ZZ + "ReplaceBinaryOperator_Sub_BitAnd:11", "actual_seq_q_next_list.append(block_sizes[cp_segment_num - cp_rank & 1])"),
    ) + tuple(
        (f"{_ZZ}ReplaceUnaryOperator_{name}:{occurrence}", f"total_q_{side}_tokens=cu_{side}[{index}],")
        for name, index in (("USub_UAdd", "+1"), ("USub_Invert", "~1"), ("USub_Not", "not 1"), ("Delete_USub", "1"))
        for occurrence, side in ((3, "prev"), (4, "next"))
    ) + (
        (_ZZ + "NumberReplacer:46", "actual_seq_q_next_list.append(block_sizes[cp_segment_num - cp_rank - 2])"),
        (_ZZ + "NumberReplacer:48", "cu_prev = [ 1] + list(accumulate(actual_seq_q_prev_list))"),
        (_ZZ + "NumberReplacer:49", "cu_prev = [ -1] + list(accumulate(actual_seq_q_prev_list))"),
        (_ZZ + "NumberReplacer:50", "cu_next = [ 1] + list(accumulate(actual_seq_q_next_list))"),
        (_ZZ + "NumberReplacer:51", "cu_next = [ -1] + list(accumulate(actual_seq_q_next_list))"),
        (_ZZ + "NumberReplacer:62", "total_q_prev_tokens=cu_prev[- 2],"),
        (_ZZ + "NumberReplacer:63", "total_q_prev_tokens=cu_prev[- 0],"),
        (_ZZ + "NumberReplacer:64", "total_q_next_tokens=cu_next[- 2],"),
        # The loop that computes the query lengths (with the kv lengths): none, so totals of 0.
        (_ZZ + "ZeroIterationForLoop:6", "for batch_id, block_sizes in []:"),
        (_ZZ + "NumberReplacer:65", "total_q_next_tokens=cu_next[- 0],"),
    ))
    + alike(RELEASE, GAP, TOKENS_PADDED, (
        (_ZZ + "ReplaceBinaryOperator_Sub_Mod:0", "pad_len = int(num_tokens) % sum(extend_seqs_len)"),
        (_ZZ + "ReplaceBinaryOperator_Sub_RShift:0", "pad_len = int(num_tokens) >> sum(extend_seqs_len)"),
        (_ZZ + "ReplaceBinaryOperator_Sub_BitXor:0", "pad_len = int(num_tokens) ^ sum(extend_seqs_len)"),
        (_ZZ + "AddNot:4", "if not pad_len > 0:"),
        (_ZZ + "NumberReplacer:16", "if pad_len > 1:"),
    ) + tuple(
        (f"{_ZZ}ReplaceComparisonOperator_Gt_{name}:0", f"if pad_len {symbol} 0:")
        for name, symbol in (("Eq", "=="), ("Lt", "<"), ("LtE", "<="))
    ), closed_by=CLOSED_BY_PADDED)
    + alike(RELEASE, GAP, _GROUP_OF_TWO, (
        (_ZZ + "ReplaceBinaryOperator_Mul_Add:0", "if self.cp_size <= 1 or num_tokens < self.cp_size + 2:"),
        (_ZZ + "ReplaceBinaryOperator_Mul_Add:1", "return all(int(length) >= self.cp_size + 2 for length in extend_lens)"),
        (_ZZ + "ReplaceBinaryOperator_Mul_Add:2", "cp_segment_num = self.cp_size + 2"),
        (_ZZ + "ReplaceBinaryOperator_Mul_Pow:0", "if self.cp_size <= 1 or num_tokens < self.cp_size ** 2:"),
        (_ZZ + "ReplaceBinaryOperator_Mul_Pow:1", "return all(int(length) >= self.cp_size ** 2 for length in extend_lens)"),
        (_ZZ + "ReplaceBinaryOperator_Mul_Pow:2", "cp_segment_num = self.cp_size ** 2"),
        (_ZZ + "ReplaceBinaryOperator_Sub_BitXor:3", "block_sizes[rank] + block_sizes[cp_segment_num - 1 ^ rank]"),
        (_ZZ + "ReplaceBinaryOperator_Sub_BitXor:8", "per_seq_block_sizes[batch_id][cp_segment_num - 1 ^ rank]"),
    ))
    + alike(RELEASE, GAP, _CP_THRESHOLD, (
        (_ZZ + "ReplaceBinaryOperator_Mul_LShift:0", "if self.cp_size <= 1 or num_tokens < self.cp_size << 2:"),
        (_ZZ + "ReplaceComparisonOperator_Lt_LtE:0", "if self.cp_size <= 1 or num_tokens <= self.cp_size * 2:"),
        (_ZZ + "NumberReplacer:12", "if self.cp_size <= 1 or num_tokens < self.cp_size * 3:"),
        (_ZZ + "NumberReplacer:13", "if self.cp_size <= 1 or num_tokens < self.cp_size * 1:"),
        (_ZZ + "NumberReplacer:15", "return all(int(length) >= self.cp_size * 1 for length in extend_lens)"),
        (_ZZ + "ReplaceBinaryOperator_Mul_BitOr:0", "if self.cp_size <= 1 or num_tokens < self.cp_size | 2:"),
        (_ZZ + "ReplaceBinaryOperator_Mul_BitOr:1", "return all(int(length) >= self.cp_size | 2 for length in extend_lens)"),
        (_ZZ + "ReplaceBinaryOperator_Mul_BitAnd:0", "if self.cp_size <= 1 or num_tokens < self.cp_size & 2:"),
        (_ZZ + "ReplaceBinaryOperator_Mul_BitAnd:1", "return all(int(length) >= self.cp_size & 2 for length in extend_lens)"),
    ), closed_by=CLOSED_BY_FLOOR)
    + alike(RELEASE, EQUIVALENT, _INVARIANTS, tuple(
        (f"{_ZZ}ReplaceComparisonOperator_Eq_{name}:{occurrence}", line.replace(" == ", f" {symbol} ", 1))
        for name, symbol in (("LtE", "<="), ("GtE", ">="), ("IsNot", "is not"))
        for occurrence, line in (
            (2, "assert len(split_list) == bs * cp_segment_num"),
            (3, "assert sum(split_list) == total_seq_lens"),
            (4, "assert len(zigzag_index) == 2 * bs"),
            (5, "assert len(cp_reverse_index) == bs * cp_segment_num"),
            (6, "assert sorted(cp_reverse_index) == list(range(bs * cp_segment_num))"),
            (7, "assert sum(per_rank_actual_token) == total_seq_lens"),
        )
    ))
    + alike(RELEASE, EQUIVALENT, _LOCAL_LEN, (
        (_ZZ + "ReplaceComparisonOperator_Eq_Gt:9", "if per_rank_token > meta.per_rank_actual_token:"),
        (_ZZ + "ReplaceComparisonOperator_Eq_GtE:9", "if per_rank_token >= meta.per_rank_actual_token:"),
        (_ZZ + "ReplaceComparisonOperator_Eq_Is:9", "if per_rank_token is meta.per_rank_actual_token:"),
    ))
    + alike(RELEASE, GAP, _SMALL_INTS, tuple(
        (f"{_ZZ}ReplaceComparisonOperator_Eq_Is:{occurrence}", line)
        for occurrence, line in (
            (2, "assert len(split_list) is bs * cp_segment_num"),
            (3, "assert sum(split_list) is total_seq_lens"),
            (4, "assert len(zigzag_index) is 2 * bs"),
            (5, "assert len(cp_reverse_index) is bs * cp_segment_num"),
            (7, "assert sum(per_rank_actual_token) is total_seq_lens"),
        )
    ), closed_by=CLOSED_BY_WIDE)
    + alike(RELEASE, EQUIVALENT, _GROUP_FLOOR, (
        (_ZZ + "ReplaceComparisonOperator_LtE_Eq:0", "if self.cp_size == 1 or num_tokens < self.cp_size * 2:"),
        (_ZZ + "ReplaceComparisonOperator_LtE_Lt:0", "if self.cp_size < 1 or num_tokens < self.cp_size * 2:"),
        (_ZZ + "NumberReplacer:11", "if self.cp_size <= 0 or num_tokens < self.cp_size * 2:"),
    ))
    + alike(RELEASE, EQUIVALENT, _MODE_TESTED_TWICE, (
        (_ZZ + "ReplaceComparisonOperator_IsNot_Is:0", "if forward_mode is None and not forward_mode.is_context_parallel_extend():"),
        (_ZZ + "AddNot:1", "if not forward_mode is not None and not forward_mode.is_context_parallel_extend():"),
        (_ZZ + "ReplaceFalseWithTrue:1", "return True"),
    ))
    + alike(RELEASE, EQUIVALENT, _PAD_VALUE, (
        (_ZZ + "NumberReplacer:142", 'x = F.pad(x, padding, mode="constant", value= 1)'),
        (_ZZ + "NumberReplacer:143", 'x = F.pad(x, padding, mode="constant", value= -1)'),
    ))
    + alike(RELEASE, EQUIVALENT, _ONE_DIM_LOC, (
        (_ZZ + "NumberReplacer:113", "swa_loc = swa_loc[: cache_loc.shape[ -1]]"),
    ))
    + alike(RELEASE, EQUIVALENT, _REVERSE_STOP, (
        (_ZZ + "NumberReplacer:39", "(cp_segment_num - 1) * bs + batch_id, -1,"),
    ))
    + alike(RELEASE, EQUIVALENT, _PAD_NEVER_NEGATIVE, (
        (_ZZ + "ReplaceComparisonOperator_Gt_NotEq:3", "if pad_size != 0:"),
        (_ZZ + "ReplaceComparisonOperator_Gt_GtE:3", "if pad_size >= 0:"),
        (_ZZ + "NumberReplacer:133", "if pad_size > -1:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _SYMMETRIC_CUDA, (
        (_ZZ + "ReplaceUnaryOperator_Delete_Not:3", "use_symmetric_memory(group, disabled= is_allocation_symmetric())"),
        (_ZZ + "AddNot:31", "if not x.is_cuda"),
    ))
    + alike(RELEASE, EQUIVALENT, _GATHER_PAD_REMAINDER, (
        (_ZZ + "ReplaceBinaryOperator_Sub_Mod:13", "pad_size = max_len % x.shape[0]"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _PAD_WIDTH_3D, (
        (_ZZ + "ReplaceBinaryOperator_Sub_BitXor:14", "padding = [0, 0] * (x.ndim ^ 1) + [0, pad_size]"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _ATTENTION_METADATA, (
        (_ZZ + "ReplaceBinaryOperator_Add_Sub:6", "prefix_offsets[batch_id] - sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Sub:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank - 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mul:6", "prefix_offsets[batch_id] * sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mul:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank * 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Div:6", "prefix_offsets[batch_id] / sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_FloorDiv:6", "prefix_offsets[batch_id] // sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_FloorDiv:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank // 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mod:6", "prefix_offsets[batch_id] % sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mod:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank % 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Pow:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank ** 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_RShift:6", "prefix_offsets[batch_id] >> sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_RShift:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank >> 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_LShift:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank << 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitOr:6", "prefix_offsets[batch_id] | sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitOr:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank | 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitAnd:6", "prefix_offsets[batch_id] & sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitAnd:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank & 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Sub:8", "prefix_offsets[batch_id] - sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mul:8", "prefix_offsets[batch_id] * sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Div:8", "prefix_offsets[batch_id] / sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_FloorDiv:8", "prefix_offsets[batch_id] // sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_Mod:8", "prefix_offsets[batch_id] % sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_RShift:8", "prefix_offsets[batch_id] >> sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitOr:8", "prefix_offsets[batch_id] | sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitAnd:8", "prefix_offsets[batch_id] & sum(block_sizes[: cp_segment_num - cp_rank])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitXor:6", "prefix_offsets[batch_id] ^ sum(block_sizes[: cp_rank + 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitXor:7", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank ^ 1])"),
        (_ZZ + "ReplaceBinaryOperator_Add_BitXor:8", "prefix_offsets[batch_id] ^ sum(block_sizes[: cp_segment_num - cp_rank])"),
    ) + tuple(
        (f"{_ZZ}ReplaceBinaryOperator_Sub_{name}:9", f"prefix_offsets[batch_id] + sum(block_sizes[: cp_segment_num {symbol} cp_rank])")
        for name, symbol in _OPERATORS
    ) + tuple(
        (f"{_ZZ}ReplaceBinaryOperator_Sub_{name}:1", f"max(int(seqs_len[i]) {symbol} extend_seqs_len[i], 0) for i in range(bs)")
        for name, symbol in _OPERATORS
    ) + tuple(
        (f"{_ZZ}AddNot:{occurrence}", f"max(actual_seq_q_{name}_list) if not actual_seq_q_{name}_list else 0")
        for occurrence, name in ((15, "prev"), (16, "next"), (17, "combined"))
    ) + (
        (_ZZ + "NumberReplacer:24", "max(int(seqs_len[i]) - extend_seqs_len[i], 1) for i in range(bs)"),
        (_ZZ + "NumberReplacer:25", "max(int(seqs_len[i]) - extend_seqs_len[i], -1) for i in range(bs)"),
        (_ZZ + "NumberReplacer:26", "prefix_offsets = [ 1] * bs"),
        (_ZZ + "NumberReplacer:27", "prefix_offsets = [ -1] * bs"),
        (_ZZ + "NumberReplacer:44", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank + 2])"),
        (_ZZ + "NumberReplacer:45", "prefix_offsets[batch_id] + sum(block_sizes[: cp_rank + 0])"),
        (_ZZ + "NumberReplacer:52", "cu_kv_prev = [ 1] + list(accumulate(kv_len_prev_list))"),
        (_ZZ + "NumberReplacer:53", "cu_kv_prev = [ -1] + list(accumulate(kv_len_prev_list))"),
        (_ZZ + "NumberReplacer:54", "cu_kv_next = [ 1] + list(accumulate(kv_len_next_list))"),
        (_ZZ + "NumberReplacer:55", "cu_kv_next = [ -1] + list(accumulate(kv_len_next_list))"),
        (_ZZ + "NumberReplacer:56", "cu_q_combined = [ 1] + list(accumulate(actual_seq_q_combined_list))"),
        (_ZZ + "NumberReplacer:57", "cu_q_combined = [ -1] + list(accumulate(actual_seq_q_combined_list))"),
        (_ZZ + "NumberReplacer:58", "cu_kv_combined = [ 1] + list(accumulate(kv_len_combined_list))"),
        (_ZZ + "NumberReplacer:59", "cu_kv_combined = [ -1] + list(accumulate(kv_len_combined_list))"),
    ) + tuple(
        (f"{_ZZ}NumberReplacer:{occurrence}", f"max(actual_seq_q_{name}_list) if actual_seq_q_{name}_list else {value}")
        for occurrence, name, value in (
            (66, "prev", 1), (67, "prev", -1), (68, "next", 1), (69, "next", -1),
            (70, "combined", 1), (71, "combined", -1),
        )
    ) + tuple(  # the test that picks the prefix offsets (140) or zeros
        (f"{_ZZ}ReplaceComparisonOperator_Eq_{name}:1", f"if seqs_len is not None and len(seqs_len) {symbol} bs:")
        for name, symbol in _COMPARISONS
    ))
)  # fmt: skip
