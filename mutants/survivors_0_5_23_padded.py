"""The survivors of 0.5.23's scope-with-cp campaign in build_metadata's padding (layers/cp/zigzag.py
131-136), read once session 25's cp-padded-device-lens scenario ran it: a batch padded past its
requests that carries its seq_lens alone, whose last request the strategy grows by the padding.
Line numbers are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import EQUIVALENT, GAP, OUTSIDE_THE_WRITE, Survivor, alike
from mutants.survivors_0_5_23_full import RELEASE

_ZZ = "srt/layers/cp/zigzag.py:core/"

_PAD_ZERO = (
    "the padding's test `pad_len > 0` (zigzag.py 132) as `>= 0` or `> -1`: they differ from it "
    "only at pad_len 0, where the body adds 0 to the last request's extend length and to a copy "
    "of its seq_lens, the same values"
)
_NEGATIVE_PAD = (
    "the padding's test `pad_len > 0` (zigzag.py 132) as `!= 0`: it differs only for a negative "
    "pad_len, a batch whose seq_lens alone (no extend lengths on the host) count a cached prefix, "
    "so that they sum past its tokens; the release then cuts the batch by lengths that include "
    "the prefix, which kvh does not model, and scenarios/serialize.py refuses such a batch"
)
_PAD_OWNER = (
    "which request's lengths the padding joins (zigzag.py 133 and 136): the first for [~1], "
    "[not 1], [-2] and [-0], the same last one for [+1] and [1] on the scenario's two requests. "
    "The strategy cuts the batch's rows into its requests' blocks and its gather puts them back "
    "by the same lengths, so every row is written at its own loc whatever request holds the "
    "padding; only the attention reads the requests' boundaries and their kv lengths (the "
    "prefix offsets of 140-145 made from seqs_len), and kvh's driver stops the forward once "
    "the write door returns"
)
_SEQS_PADDED = (
    "the test whether seqs_len grows by the padding too (zigzag.py 134): seqs_len is read after "
    "it only for the prefix offsets (max(seq - extend, 0), 140-145), which feed the kv lengths "
    "the attention reads (as _ATTENTION_METADATA); and once pad_len > 0 seqs_len is never None "
    "(a positive pad needs a batch without extend lengths, cut by its non-empty seq_lens), so "
    "the forms that test `seqs_len is None` only skip its growth"
)

SURVIVORS_0_5_23_PADDED: tuple[Survivor, ...] = (
    alike(RELEASE, EQUIVALENT, _PAD_ZERO, (
        (_ZZ + "ReplaceComparisonOperator_Gt_GtE:0", "if pad_len >= 0:"),
        (_ZZ + "NumberReplacer:17", "if pad_len > -1:"),
    ))
    + alike(RELEASE, GAP, _NEGATIVE_PAD, (
        (_ZZ + "ReplaceComparisonOperator_Gt_NotEq:0", "if pad_len != 0:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _PAD_OWNER, tuple(
        (f"{_ZZ}{operator}:{occurrence + offset}", f"{name}[{index}] += pad_len")
        for offset, name in ((0, "extend_seqs_len"), (1, "seqs_len"))
        for operator, occurrence, index in (
            ("ReplaceUnaryOperator_USub_UAdd", 0, "+1"),
            ("ReplaceUnaryOperator_USub_Invert", 0, "~1"),
            ("ReplaceUnaryOperator_USub_Not", 0, "not 1"),
            ("ReplaceUnaryOperator_Delete_USub", 0, "1"),
        )
    ) + tuple(
        (f"{_ZZ}NumberReplacer:{occurrence}", f"{name}[{index}] += pad_len")
        for occurrence, name, index in (
            (18, "extend_seqs_len", "- 2"), (19, "extend_seqs_len", "- 0"),
            (20, "seqs_len", "- 2"), (21, "seqs_len", "- 0"),
        )
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, _SEQS_PADDED, tuple(
        (f"{_ZZ}ReplaceComparisonOperator_Eq_{name}:0", f"if seqs_len is not None and len(seqs_len) {symbol} len(extend_seqs_len):")
        for name, symbol in (("NotEq", "!="), ("Lt", "<"), ("LtE", "<="), ("Gt", ">"), ("GtE", ">="), ("Is", "is"), ("IsNot", "is not"))
    ) + (
        (_ZZ + "ReplaceComparisonOperator_IsNot_Is:1", "if seqs_len is None and len(seqs_len) == len(extend_seqs_len):"),
        (_ZZ + "AddNot:5", "if not seqs_len is not None and len(seqs_len) == len(extend_seqs_len):"),
        (_ZZ + "ReplaceAndWithOr:1", "if seqs_len is not None or len(seqs_len) == len(extend_seqs_len):"),
    ))
)  # fmt: skip
