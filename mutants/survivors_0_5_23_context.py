"""The full campaign over 0.5.23's whole scope (docs/mutation/sglang-0.5.23-scope.json): the
records of the mutants it judged that survived in the runtime around the write, each read against
the release: the parallel context (its lookups, refusals and topology check), the environment's
fields, the CP switch and the out-of-bounds probe (the pools' are in
mutants/survivors_0_5_23_full.py). Line numbers are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    ADD_REPLACED,
    GAP,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)
from mutants.survivors_0_5_23_full import RELEASE

_R = "srt/runtime_context.py:core/"
CP_WRITE = (
    "the context-parallel write (is_cp_active): get_cp_strategy().materialize_full_kv / "
    "materialize_full_mla_kv all-gathers k and v across CP ranks before it writes; kvh drives "
    "no CP rank in a backend's forward (its CP write is judged by `kvh cp` through the model, "
    "docs/distributed.md), so no check reaches it"
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
        ("srt/layers/cp/utils.py:core/ReplaceComparisonOperator_Is_IsNot:0", "if forward_mode is not None or not forward_mode.is_context_parallel_extend():"),
        ("srt/layers/cp/utils.py:core/ReplaceUnaryOperator_Delete_Not:3", "if forward_mode is None or  forward_mode.is_context_parallel_extend():"),
        ("srt/layers/cp/utils.py:core/AddNot:7", "if not forward_mode is None or not forward_mode.is_context_parallel_extend():"),
        ("srt/layers/cp/utils.py:core/ReplaceOrWithAnd:0", "if forward_mode is None and not forward_mode.is_context_parallel_extend():"),
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
