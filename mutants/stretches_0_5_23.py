"""The stretches of 0.5.23 that no check of the scope campaign runs
(docs/mutation/sglang-0.5.23-scope.json), each read against the release (mutants/survivor_record.py
Stretch): they class its UNREACHED mutants. Line numbers are 0.5.23's."""

from __future__ import annotations

from mutants.survivor_record import (
    EQUIVALENT,
    GAP,
    OUT_OF_REACH,
    OUTSIDE_THE_WRITE,
    Stretch,
    after_write,
)
from mutants.survivors_0_5_23_backends import K_READ_BACK
from mutants.survivors_0_5_23_context import CP_WRITE, PARALLEL_REFUSAL, TOPOLOGY_CHECK
from mutants.survivors_0_5_23_cp import (
    GATHER_F,
    MSCCLPP_ALL_GATHER,
    NCCL_ALL_GATHER,
    ROCM_ALL_GATHER,
)
from mutants.survivors_0_5_23_full import RELEASE

_LAYER_WAIT_READ = (
    "the wait on the layer-wise host-to-device loading counter that only HiCache's controller "
    "registers (managers/cache_controller.py, its LayerLoadingEvent device events); none is "
    "registered without a GPU host cache, so the wait never runs"
)

# Stretches of 0.5.23 that no check runs, each read (mutants/survivor_record.py Stretch). The
# line after which each forward's door returns is where kvh's release driver stops it.
_FA3_F = "flashattention_backend.py FlashAttentionBackend."
_TRITON_F = "triton_backend.py TritonAttnBackend."
_FLASHINFER_F = "flashinfer_backend.py FlashInferAttnBackend."
_TORCH_NATIVE_F = "torch_native_backend.py TorchNativeAttnBackend."
_FLASHINFER_MLA_F = "flashinfer_mla_backend.py FlashInferMLAAttnBackend."


def _after(function: str, door_end: int, last: int) -> Stretch:
    return after_write(RELEASE, function, door_end, last)


STRETCHES_0_5_23: tuple[Stretch, ...] = (
    _after(_FA3_F + "forward_extend", 1549, 2069),
    _after(_FA3_F + "forward_decode", 2121, 2421),
    _after(_TRITON_F + "forward_extend", 1743, 1916),
    _after(_TRITON_F + "forward_decode", 2351, 2501),
    _after(_FLASHINFER_F + "forward_decode", 1547, 1576),
    _after(_TORCH_NATIVE_F + "forward_extend", 301, 336),
    _after(_TORCH_NATIVE_F + "forward_decode", 369, 398),
    _after(_FLASHINFER_MLA_F + "forward_extend", 731, 777),
    _after(_FLASHINFER_MLA_F + "forward_decode", 806, 842),
    Stretch(
        RELEASE,
        _FLASHINFER_MLA_F + "forward_extend",
        713,
        716,
        OUTSIDE_THE_WRITE,
        "the MHA chunk path over a cached prefix (attn_attend_prefix_cache with a prefix "
        "length): it returns the chunk runner's attention output and writes nothing (kvh's "
        "batches carry no cached prefix, docs/backends.md flashinfer_mla)",
    ),
    # Its paged branch writes at 1400-1410, then runs the paged attention; the ragged branch
    # writes at 1505-1516 and returns the attention output at 1518.
    _after(_FLASHINFER_F + "forward_extend", 1410, 1439),
    _after(_FLASHINFER_F + "forward_extend", 1516, 1518),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "forward_extend",
        1474,
        1503,
        OUTSIDE_THE_WRITE,
        "the ragged branch's attention over a cached prefix (extend_no_prefix False): the "
        "ragged and paged wrappers' outputs merged into o, which the write at 1505-1516 "
        "does not read",
    ),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "_get_wrapper_idx",
        1582,
        1587,
        OUTSIDE_THE_WRITE,
        "which prefill or decode wrapper a layer's attention runs with, where the backend "
        "keeps two (sliding-window or cross-attention dispatch): the wrapper computes the "
        "attention output only; the write does not use it",
    ),
    Stretch(RELEASE, _FA3_F + "forward_extend", 1509, 1532, GAP, CP_WRITE),
    Stretch(RELEASE, _TRITON_F + "forward_extend", 1700, 1711, GAP, K_READ_BACK),
    Stretch(RELEASE, _FLASHINFER_F + "forward_extend", 1445, 1450, GAP, K_READ_BACK),
    Stretch(
        RELEASE,
        _TRITON_F + "forward_decode",
        2314,
        2324,
        GAP,
        "the draft runner's check of a speculative step's swa_loc length; kvh drives no "
        "draft runner",
    ),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "forward_extend",
        1380,
        1392,
        GAP,
        "the prefill through a dequantizing workspace (an FP4 cache whose attention access "
        "is DEQUANT_WORKSPACE); kvh drives flashinfer over no FP4 cache",
    ),
    Stretch(
        RELEASE,
        _FLASHINFER_F + "forward_extend",
        1457,
        1458,
        GAP,
        "an encoder-only layer of a model that is not a diffusion LM, whose forward skips the "
        "write; kvh's scenarios have no encoder-only layer",
    ),
    Stretch(
        RELEASE,
        "mla_buffer.py _set_mla_kv_buffer_impl",
        217,
        280,
        OUT_OF_REACH,
        "the SM90 JIT CUDA and Triton MLA scatters: the CPU platform (srt/platforms/cpu.py) "
        "keeps PlatformCapabilities' default supports_triton=False, so the function takes "
        "the torch scatter at 205-215 and returns (measured: those lines ran in every MLA "
        "check); only a platform that declares supports_triton runs 217-280",
    ),
    Stretch(
        RELEASE,
        "memory_pool.py MHATokenToKVPool._quantized_scales",
        3037,
        3044,
        OUT_OF_REACH,
        "the per-layer global scales of a quant method with k_scales_gpu, which only "
        "NVFP4KVCacheMethod has (fp4_kv_cache_quant_method.py 468); the census measured that "
        "NVFP4's quantiser needs SM90+ (harness/sut/probe/write_doors.py)",
    ),
    *(
        Stretch(RELEASE, function, first, last, OUT_OF_REACH, _LAYER_WAIT_READ)
        for function, first, last in (
            ("memory_pool.py MHATokenToKVPool.get_key_buffer", 2857, 2857),
            ("memory_pool.py MHATokenToKVPool.get_value_buffer", 2878, 2878),
            ("swa_memory_pool.py SWAKVPool._wait_for_layer", 167, 167),
        )
    ),
    Stretch(
        RELEASE,
        "async_probe.py maybe_detect_oob",
        192,
        201,
        EQUIVALENT,
        "the probe's body after `if not envs.SGLANG_ENABLE_ASYNC_ASSERT.get(): return`: a "
        "debugging switch, off as the release ships and as kvh judges it (as the door "
        "campaign's bound records say), so the probe returns before these lines",
    ),
    Stretch(RELEASE, "utils.py is_cp_active", 125, 133, GAP, CP_WRITE),
    Stretch(RELEASE, "base.py get_cp_strategy", 320, 330, GAP, CP_WRITE),
    Stretch(
        RELEASE,
        "runtime_context.py ParallelContext._read",
        390,
        402,
        GAP,
        PARALLEL_REFUSAL,
    ),
    Stretch(
        RELEASE,
        "runtime_context.py _validate_parallel",
        283,
        351,
        OUTSIDE_THE_WRITE,
        TOPOLOGY_CHECK,
    ),
    Stretch(
        RELEASE,
        "environ.py EnvField.get",
        71,
        73,
        GAP,
        "an environment field explicitly set to None (envs.X.set(None)); kvh sets none",
    ),
    # The CP gather's collective (scope judged with cp): the communicators a GPU group holds.
    Stretch(RELEASE, GATHER_F, 1307, 1324, OUT_OF_REACH, ROCM_ALL_GATHER),
    Stretch(RELEASE, GATHER_F, 1330, 1331, OUT_OF_REACH, MSCCLPP_ALL_GATHER),
    Stretch(RELEASE, GATHER_F, 1337, 1341, OUT_OF_REACH, NCCL_ALL_GATHER),
    Stretch(
        RELEASE,
        "runtime_context.py RuntimeContext.config_bag",
        1070,
        1071,
        EQUIVALENT,
        "the gate of the role-namespace check (_ROLE_NS_MODE, from SGLANG_ROLE_NAMESPACES): a "
        'debugging switch, "off" as the release ships and as kvh judges it, and in "off" '
        '_check_role_namespace does nothing (it acts only in "record" or "enforce", '
        "runtime_context.py 1084-1087), so every form of the gate returns the same bag",
    ),
)
