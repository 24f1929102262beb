"""The full campaign over 0.5.23's whole scope (docs/mutation/sglang-0.5.23-scope.json): the
records of the mutants it judged that survived in the runtime around the write, each read against
the release: the parallel context (its lookups, refusals and topology check), the environment's
fields, the CP switch and the out-of-bounds probe (the pools' are in
mutants/survivors_0_5_23_full.py). Line numbers are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    ADD_REPLACED,
    EQUIVALENT,
    GAP,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)
from mutants.survivors_0_5_23_full import RELEASE

_R = "srt/runtime_context.py:core/"
CP_WRITE = (
    "the context-parallel write (is_cp_active): get_cp_strategy().materialize_full_kv / "
    "materialize_full_mla_kv all-gathers k and v across CP ranks before it writes. The scope's "
    "universe has no cp cells (when it was judged, kvh drove no CP rank in a backend's forward "
    "and judged the CP write by `kvh cp` through the model); since session 20 kvh run's cp cells "
    "run the release's own CP write on two gloo ranks (backends/cp_release.py), and the targeted "
    "campaign docs/mutation/sglang-0.5.23-cp.json judges these functions there: what it kills "
    "says so (closed_by), and the scope counts it until it is judged again with cp in its universe"
)
CP_CLOSED = (
    "session 20: kvh run's cp cells run the release's own CP write on a group of two ranks, in "
    "extend and decode (backends/cp_release.py, harness/sut/worker/cp_group.py); killed in "
    "docs/mutation/sglang-0.5.23-cp.json"
)
_ENUM_IDENTITY = (
    "`is` for `==` between ForwardMode members: an IntEnum member is one object, so identity "
    "and equality agree for every mode"
)
_EXTEND_SMALLEST = (
    "`<=` for `==` against ForwardMode.EXTEND: EXTEND is the enum's first member (auto(): 1), "
    "so no mode lies below it"
)
_DRAFT_FLAG_OFF = (
    "a DRAFT_EXTEND_V2 comparison evaluated only when include_draft_extend_v2 is True, which no "
    "caller in 0.5.23 passes: every call of is_context_parallel_extend takes the default False "
    "(cp/utils.py 124, zigzag.py 113, interleave.py 89 and 171, forward_batch_info.py 1418, the "
    "ascend and musa backends)"
)
_MODE_RECHECKED = (
    "`or` to `and` in is_cp_active's mode test: a batch always has a mode, so the test no longer "
    "returns early, but both CP strategies' can_apply test the mode again (zigzag.py 113, "
    "interleave.py 171) and refuse the same modes"
)
_LATER_MODES = (
    "a forward mode after DECODE (MIXED, IDLE, TARGET_VERIFY, DRAFT_EXTEND_V2 and on): the "
    "mutated test differs from the release's only there, and kvh's cells forward extend and "
    "decode batches only; a chunked-prefill MIXED batch on a CP rank would tell them apart"
)
_DRAFT_MODE = (
    "the DRAFT_EXTEND_V2 mode: the mutant counts a speculative draft extend as a CP extend, and "
    "kvh drives no draft runner's forward"
)
_STRATEGY_KIND = (
    "get_cp_strategy_kind's None test negated: is_zigzag() then says False under the zigzag "
    "strategy, so pad_logical_token_to_physical aligns each rank's share to N rows instead of "
    "2N; _all_gather_reorganized trims each rank's chunk back to its logical length "
    "(per_rank_logical_token) before the gathered rows are written, so the cache gets the "
    "same rows"
)
_F = "srt/model_executor/forward_batch_info.py:core/"
_CPU = "srt/layers/cp/utils.py:core/"
_CPB = "srt/layers/cp/base.py:core/"
_OOB_PROBE_ON = (
    "the out-of-bounds probe turned on: it asserts every loc lies in [0, size + page_size), which "
    "each loc kvh hands the doors does; a negative loc, which torch's indexing wraps where the "
    "probe would raise, is not among kvh's release scenarios"
)
_ENV_PARSE = (
    "the handler of an environment value that does not parse: kvh sets none of the release's "
    "environment fields"
)
PARALLEL_REFUSAL = (
    "the refusals of a parallel name nobody published (no config, an unwritten derived width) "
    "and their messages: kvh's release state publishes every name a write reads, and the "
    "topology check that meets the others when kvh states a DCP rank's group catches whatever "
    "they raise"
)
TOPOLOGY_CHECK = (
    "the parallel context's check of a stated topology (runtime_context.py 266-351) and the "
    "rollback of a refused override (438-441): they run when kvh states a DCP rank's group "
    "with get_parallel().override, as a server's publish does, and decide only whether that "
    "topology is accepted; the group kvh states is consistent and the widths it does not state "
    "are unreadable (skipped), so a check that accepted more, reported otherwise or kept a "
    "refused override changes no write"
)
_PARALLEL_LOOKUP = (
    "the parallel context's lookup of a name it was not stamped with: kvh stamps the DCP names "
    "the write reads (attn_dcp_size, attn_dcp_rank, dcp_enabled: harness/sut/load/"
    "dcp_rank.py pin_dcp_off), which return from the stamp before these lines; the "
    "names that do reach them in kvh's checks are not ones the mutated tests tell apart"
)

SURVIVORS_0_5_23_CONTEXT: tuple[Survivor, ...] = (
    alike(RELEASE, GAP, CP_WRITE, (
        (_CPU + "ReplaceComparisonOperator_Is_IsNot:0", "if forward_mode is not None or not forward_mode.is_context_parallel_extend():"),
        (_CPU + "ReplaceUnaryOperator_Delete_Not:3", "if forward_mode is None or  forward_mode.is_context_parallel_extend():"),
        (_CPU + "AddNot:7", "if not forward_mode is None or not forward_mode.is_context_parallel_extend():"),
        (_CPB + "AddNot:12", "if not _STRATEGY is None:"),
        (_CPB + "ReplaceComparisonOperator_Is_IsNot:0", "if _STRATEGY is not None:"),
        (_F + "ReplaceComparisonOperator_Eq_Gt:8", "self > ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_GtE:8", "self >= ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_IsNot:8", "self is not ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_Lt:8", "self < ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_NotEq:8", "self != ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_IsNot:9", "or self is not ForwardMode.MIXED"),
        (_F + "ReplaceComparisonOperator_Eq_Lt:9", "or self < ForwardMode.MIXED"),
        (_F + "ReplaceComparisonOperator_Eq_LtE:9", "or self <= ForwardMode.MIXED"),
        (_F + "ReplaceComparisonOperator_Eq_NotEq:9", "or self != ForwardMode.MIXED"),
        (_F + "ReplaceOrWithAnd:8", "and self == ForwardMode.MIXED"),
        (_F + "ReplaceFalseWithTrue:10", "else True"),
    ), closed_by=CP_CLOSED)
    + alike(RELEASE, EQUIVALENT, _ENUM_IDENTITY, (
        (_F + "ReplaceComparisonOperator_Eq_Is:8", "self is ForwardMode.EXTEND"),
        (_F + "ReplaceComparisonOperator_Eq_Is:9", "or self is ForwardMode.MIXED"),
        (_F + "ReplaceComparisonOperator_Eq_Is:10", "self is ForwardMode.DRAFT_EXTEND_V2"),
    ))
    + alike(RELEASE, EQUIVALENT, _EXTEND_SMALLEST, (
        (_F + "ReplaceComparisonOperator_Eq_LtE:8", "self <= ForwardMode.EXTEND"),
    ))
    + alike(RELEASE, EQUIVALENT, _DRAFT_FLAG_OFF, tuple(
        (f"{_F}ReplaceComparisonOperator_Eq_{name}:10", f"self {symbol} ForwardMode.DRAFT_EXTEND_V2")
        for name, symbol in (
            ("Gt", ">"), ("GtE", ">="), ("IsNot", "is not"), ("Lt", "<"), ("LtE", "<="),
            ("NotEq", "!="),
        )
    ))
    + alike(RELEASE, EQUIVALENT, _MODE_RECHECKED, (
        (_CPU + "ReplaceOrWithAnd:0", "if forward_mode is None and not forward_mode.is_context_parallel_extend():"),
    ))
    + alike(RELEASE, EQUIVALENT, _STRATEGY_KIND, (
        (_CPB + "ReplaceComparisonOperator_Is_IsNot:1", "if strategy is not None:"),
        (_CPB + "AddNot:14", "if not strategy is None:"),
    ))
    + alike(RELEASE, GAP, _LATER_MODES, (
        (_F + "ReplaceComparisonOperator_Eq_Gt:9", "or self > ForwardMode.MIXED"),
        (_F + "ReplaceComparisonOperator_Eq_GtE:9", "or self >= ForwardMode.MIXED"),
        (_F + "ReplaceOrWithAnd:9", "and ("),
    ))
    + alike(RELEASE, GAP, _DRAFT_MODE, (
        (_F + "ReplaceFalseWithTrue:9", "def is_context_parallel_extend(self, include_draft_extend_v2: bool = True):"),
        (_F + "AddNot:12", "if not include_draft_extend_v2"),
    ))
    + alike(RELEASE, GAP, _OOB_PROBE_ON, (
        ("srt/utils/async_probe.py:core/AddNot:18", "if not not envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
        ("srt/utils/async_probe.py:core/ReplaceUnaryOperator_Delete_Not:8", "if  envs.SGLANG_ENABLE_ASYNC_ASSERT.get():"),
    ))
    + alike(RELEASE, GAP, _ENV_PARSE, (
        ("srt/environ.py:core/ExceptionReplacer:1", "except CosmicRayTestingException as e:"),
    ))
    + alike(RELEASE, GAP, PARALLEL_REFUSAL, tuple(
        # The refusal message's continued lines, each opening with the `+` replaced.
        (f"{_R}ReplaceBinaryOperator_Add_{name}:{occurrence}", f"{symbol} {rest}")
        for name, symbol in ADD_REPLACED
        for occurrence, rest in (
            (6, "declared.doc"),
            (7, 'f" Write it by publishing a rank bundle or building the groups, "'),
        )
    ) + (
        (_R + "ReplaceComparisonOperator_IsNot_Is:1", "if declared is None and not declared.fn:"),
        (_R + "ReplaceComparisonOperator_IsNot_Is:2", "if declared is None:"),
        (_R + "ReplaceUnaryOperator_Delete_Not:3", "if declared is not None and  declared.fn:"),
        (_R + "AddNot:19", "if not declared is not None and not declared.fn:"),
        (_R + "AddNot:20", "if not declared is not None:"),
        (_R + "ReplaceAndWithOr:4", "if declared is not None or not declared.fn:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, TOPOLOGY_CHECK, (
        (_R + "ReplaceComparisonOperator_Is_NotEq:0", "if size != _UNREADABLE:"),
        (_R + "ReplaceComparisonOperator_Is_Eq:0", "if size == _UNREADABLE:"),
        (_R + "ReplaceComparisonOperator_Is_IsNot:0", "if size is not _UNREADABLE:"),
        (_R + "AddNot:11", "if not size is _UNREADABLE:"),
        (_R + "ReplaceContinueWithBreak:0", "break"),
        (_R + "ReplaceContinueWithBreak:1", "break"),
        (_R + "ZeroIterationForLoop:0", "for rank_name, size_name in []:"),
        (_R + "ZeroIterationForLoop:1", "for size_name, group_name in []:"),
        (_R + "ExceptionReplacer:3", "except CosmicRayTestingException:"),
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
)  # fmt: skip
