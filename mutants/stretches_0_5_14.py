"""The stretches of 0.5.14's write-path functions that no check of the unmodified release runs
(mutants/survivor_record.py Stretch), each read in the release: the scope campaign's unreached
mutants there. Line numbers are 0.5.14's."""

from __future__ import annotations

from mutants.survivor_record import EQUIVALENT, GAP, OUTSIDE_THE_WRITE, Stretch, after_write
from mutants.survivors_0_5_14 import RELEASE
from mutants.survivors_0_5_14_mla import NO_NOPE, SMALL_ROPE
from mutants.survivors_0_5_14_scope import (
    CP_WRITE_0_5_14,
    ENCODER_ONLY_0_5_14,
    READ_BACK_0_5_14,
)

_FA3_F = "flashattention_backend.py FlashAttentionBackend."
_FLASHINFER_F = "flashinfer_backend.py FlashInferAttnBackend."
_TRITON_F = "triton_backend.py TritonAttnBackend."
_TORCH_NATIVE_F = "torch_native_backend.py TorchNativeAttnBackend."

STRETCHES_0_5_14: tuple[Stretch, ...] = (
    after_write(RELEASE, _TRITON_F + "forward_extend", 1081, 1183),
    after_write(RELEASE, _TRITON_F + "forward_decode", 1367, 1422),
    after_write(RELEASE, _TORCH_NATIVE_F + "forward_extend", 301, 336),
    after_write(RELEASE, _TORCH_NATIVE_F + "forward_decode", 369, 398),
    Stretch(RELEASE, _TRITON_F + "forward_extend", 1038, 1047, GAP, READ_BACK_0_5_14),
    Stretch(RELEASE, "mla_buffer.py set_mla_kv_buffer_kernel", 39, 44, GAP, SMALL_ROPE),
    Stretch(RELEASE, "mla_buffer.py set_mla_kv_buffer_kernel", 45, 51, GAP, NO_NOPE),
    after_write(RELEASE, _FA3_F + "forward_extend", 844, 1301),
    after_write(RELEASE, _FA3_F + "forward_decode", 1340, 1599),
    Stretch(RELEASE, _FA3_F + "forward_extend", 812, 835, GAP, CP_WRITE_0_5_14),
    # flashinfer's paged branch writes at 977-984 and then runs the paged attention; its ragged
    # branch runs its attention first and writes at 1073-1081.
    after_write(RELEASE, _FLASHINFER_F + "forward_extend", 984, 1013),
    after_write(RELEASE, _FLASHINFER_F + "forward_extend", 1081, 1083),
    after_write(RELEASE, _FLASHINFER_F + "forward_decode", 1114, 1127),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "forward_extend",
        1044,
        1071,
        OUTSIDE_THE_WRITE,
        "the ragged branch's attention over a cached prefix (extend_no_prefix False): the "
        "ragged and paged wrappers' outputs merged into o, which the write at 1073-1081 does "
        "not read",
    ),  # fmt: skip
    Stretch(RELEASE, _FLASHINFER_F + "forward_extend", 1019, 1021, GAP, READ_BACK_0_5_14),
    Stretch(RELEASE, _FLASHINFER_F + "forward_extend", 1028, 1029, GAP, ENCODER_ONLY_0_5_14),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "_get_wrapper_idx",
        1133,
        1138,
        OUTSIDE_THE_WRITE,
        "which prefill or decode wrapper a layer's attention runs with, where the backend "
        "keeps two (sliding-window or cross-attention dispatch): the wrapper computes the "
        "attention output only; the write does not use it",
    ),  # fmt: skip
    Stretch(
        RELEASE,
        "async_probe.py maybe_detect_oob",
        107,
        117,
        EQUIVALENT,
        "the probe's body after `if not envs.SGLANG_ENABLE_ASYNC_ASSERT.get(): return`: a "
        "debugging switch, off as the release ships and as kvh judges it (as the door "
        "campaign's bound records say), so the probe returns before these lines",
    ),  # fmt: skip
    Stretch(
        RELEASE,
        "environ.py EnvField.get",
        58,
        60,
        GAP,
        "an environment field explicitly set to None (envs.X.set(None)); kvh sets none",
    ),  # fmt: skip
    Stretch(
        RELEASE,
        "environ.py EnvField.get",
        67,
        72,
        GAP,
        "the handler of an environment value that does not parse: kvh sets none of the "
        "release's environment fields",
    ),  # fmt: skip
)
