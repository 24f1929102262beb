"""The survivors of 0.5.23's campaigns over the whole scope beyond the doors (the seeded sample
docs/mutation/sglang-0.5.23-scope-sample40.json), each read against the release and classified
(mutants/survivor_record.py says what the classes mean). Line numbers are 0.5.23's."""

# ruff: noqa: E501 - the records quote each mutated line of the release whole
from __future__ import annotations

from mutants.survivor_record import (
    GAP,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Survivor,
    alike,
)

RELEASE = "sglang==0.5.23"
_FA3 = "srt/layers/attention/flashattention_backend.py:core/"
_TRITON = "srt/layers/attention/triton_backend.py:core/"
_M = "srt/mem_cache/memory_pool.py:core/"

_AFTER_THE_DOOR = (
    "the attention math after the forward's write (flashattention_backend.py writes at 1504-1548 "
    "in forward_extend and 2097-2121 in forward_decode; triton_backend.py at 1711-1745 and "
    "2306-2350): kvh's release driver stops the forward once the door returns "
    "(backends/real_code.py), and the lines after it read the cache and write none of it"
)
ATTENTION_OUTPUT = (
    "a value the forward hands only to its attention math before the write: torch_native's "
    "output buffer o (torch_native_backend.py 288-291), and flashinfer's ragged-prefill window "
    "swa_window_left (flashinfer_backend.py 1474-1481, read by the ragged wrapper whose o1, s1 "
    "the write at 1506 never reads)"
)
DENSE_FP8_PREFILL = (
    "TritonAttnBackend._can_run_dense_fp8_chunked_mha (triton_backend.py 1499-1521) is an `and` "
    "chain whose first operand, use_dense_fp8_chunked_prefill, needs is_gfx95_supported() (a "
    "ROCm MI355 GPU, 273-283): False here, so the mutated operands are never evaluated"
)
_CUDA_STORE = (
    "read only by _set_kv_buffer_impl's `if (_is_cuda or _is_hip) and can_use_store_cache(...)` "
    "branch (memory_pool.py 175-185: the CUDA store_cache kernel's row bytes and size limit); a "
    "CPU takes the indexed assignment"
)
ALT_STREAM = (
    "alt_stream is a CUDA stream, built only where _is_cuda or the platform is CUDA-alike "
    "(memory_pool.py 2297-2301) and None here, and capture mode is a CUDA graph's: `or` and `and` "
    "are both False on a CPU"
)
_HIP_DSA_FP8 = (
    "_write_mla_kv_buffer's ROCm branch (memory_pool.py 4991, `if _is_hip and self.use_dsa and "
    "...`): `_is_hip` is False on a CPU, so the comparison is never evaluated"
)
_LAYER_WAIT = (
    "SWAKVPool._wait_for_layer waits on the layer-wise host-to-device loading counter that only "
    "HiCache's controller registers (managers/cache_controller.py 360, its LayerLoadingEvent "
    "device events); none is registered without a GPU host cache, so the wait never runs"
)
DRAFT_SWA_ASSERT = (
    "triton's decode asserts a draft step's swa_out_cache_loc is as long as its locs "
    "(triton_backend.py 2312-2321) only where `self.is_draft_runner`: kvh drives triton as a "
    "target model's runner, so the `is None` mutant's assert never runs; a draft runner's decode "
    "with a speculative batch would close it"
)
_KEY_READER_DTYPE = (
    "MHATokenToKVPool._get_key_buffer's `store_dtype != dtype` (memory_pool.py 2848): kvh reads "
    "a pool's bytes through get_key_buffer and compares bytes, so a reader that returns the raw "
    "uint8 storage instead of its fp8 view (and a bf16 view of bf16 storage) passed"
)
_READER_DTYPE_CLOSED = (
    "the reader_dtype oracle (harness/compare/oracles.py): the dtype SGLang's K/V reader returns "
    "is compared with the judge's (tests/test_reader_dtype.py); killed when judged again in "
    "session 14"
)

SURVIVORS_0_5_23_SCOPE: tuple[Survivor, ...] = (
    alike(RELEASE, OUTSIDE_THE_WRITE, _AFTER_THE_DOOR, (
        (_FA3 + "ReplaceUnaryOperator_Delete_Not:15", "causal =  ("),
        (_FA3 + "ReplaceUnaryOperator_USub_Invert:17", "else (-1, ~1)"),
        (_FA3 + "AddNot:118", "if not use_local_attn:"),
        (_FA3 + "NumberReplacer:341", "q_cp = q.contiguous().view(- 0, layer.tp_q_head_num, layer.head_dim)"),
        (_FA3 + "NumberReplacer:357", "v_cache=value_cache.view(- 0, layer.tp_v_head_num, layer.v_head_dim),"),
        (_FA3 + "AddNot:139", "assert not not get_schedule().disable_chunked_prefix_cache"),
        (_FA3 + "ReplaceUnaryOperator_USub_UAdd:53", "window_size=(+1, -1),"),
        (_FA3 + "ReplaceAndWithOr:69", "or not use_cascade_attn"),
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:45", "if score_mod is None:"),
        (_TRITON + "ReplaceComparisonOperator_Gt_Eq:18", "if layer.sliding_window_size is not None and layer.sliding_window_size == -1:"),
        (_TRITON + "ReplaceComparisonOperator_Eq_Gt:22", "layer.attn_type > AttentionType.DECODER_BIDIRECTIONAL"),
        (_TRITON + "ReplaceComparisonOperator_Gt_Eq:27", "if layer.sliding_window_size is not None and layer.sliding_window_size == -1:"),
    ))
    + alike(RELEASE, OUTSIDE_THE_WRITE, ATTENTION_OUTPUT, (
        ("srt/layers/attention/torch_native_backend.py:core/NumberReplacer:95", "o = q.new_empty((q.shape[ -1], layer.tp_q_head_num * layer.v_head_dim))"),
        ("srt/layers/attention/flashinfer_backend.py:core/AddNot:96", "if not not ("),
    ))
    + alike(RELEASE, OUT_OF_REACH, DENSE_FP8_PREFILL, (
        (_TRITON + "ReplaceComparisonOperator_Eq_GtE:11", "and q.dtype >= torch.float8_e4m3fn"),
        (_TRITON + "ReplaceComparisonOperator_Is_IsNot:17", "and (layer.sliding_window_size is not None or layer.sliding_window_size <= -1)"),
        (_TRITON + "ReplaceOrWithAnd:8", "and (layer.sliding_window_size is None and layer.sliding_window_size <= -1)"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _CUDA_STORE, (
        (_M + "ReplaceBinaryOperator_Mul_LShift:4", "v_row_bytes = v_row_dim << store_dtype.itemsize"),
        (_M + "ReplaceBinaryOperator_Add_Mod:38", "size_limit=self.size % self.page_size,"),
    ))
    + alike(RELEASE, OUT_OF_REACH, ALT_STREAM, (
        (_M + "ReplaceAndWithOr:8", "if get_is_capture_mode() or alt_stream is not None:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _HIP_DSA_FP8, (
        (_M + "ReplaceComparisonOperator_Eq_Is:32", "if _is_hip and self.use_dsa and self.dtype is fp8_dtype:"),
    ))
    + alike(RELEASE, OUT_OF_REACH, _LAYER_WAIT, (
        ("srt/mem_cache/swa_memory_pool.py:core/ReplaceBinaryOperator_Sub_BitAnd:0", "self.layer_transfer_counter.wait_until(layer_id & self.start_layer)"),
    ))
    + alike(RELEASE, GAP, DRAFT_SWA_ASSERT, (
        (_TRITON + "ReplaceComparisonOperator_IsNot_Is:70", "and forward_batch.spec_info is None"),
    ))
    + alike(RELEASE, GAP, _KEY_READER_DTYPE, (
        (_M + "ReplaceComparisonOperator_NotEq_Eq:15", "if self.store_dtype == self.dtype:"),
    ), closed_by=_READER_DTYPE_CLOSED)
)  # fmt: skip
