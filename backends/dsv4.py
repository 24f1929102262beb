"""The DeepSeek V4 main-KV writers (0.5.23), on the pools DeepSeekV4TokenToKVPool routes to.

dsv4: DeepSeekV4TokenToKVPool.set_swa_key_buffer and set_extra_key_buffer hand a pool layer id,
the loc and a NopeFp8RopeBf16Pack to DeepSeekV4SingleKVPool.set_key_buffer (a bare loc, no
KVWriteLoc, no scales); on a HiSparse model the C4 layers' pool is HiSparseC4DevicePool, whose
set_key_buffer takes the same call. In 0.5.23 the pack is built by
test/kernels/deepseek_v4/k_cache_reference.py quant_to_nope_fp8_rope_bf16_pack_triton, which the
attention test kits (test/kits/.../dsv4_attention.py) call on the layer's bf16 latent K (one
512-wide row a token) right before set_swa_key_buffer_radix: per 64-value NoPE tile, the power
of two at or above max(|x|, 1e-8) / 448 is the scale (its exponent + 127 the UE8M0 byte), the
tile times its reciprocal clamped to +-448 and cast to e4m3; the 64 RoPE values stay bf16. The
model runs it in torch (quantise_pack below).

dsv4_trtllm: layers/attention/dsv4/compressor_trtllm.py hands the compressed (normed, roped)
latent rows to set_extra_key_buffer_fused, which calls DeepSeekV4UniformFP8KVPool.
set_key_buffer_fused(layer_id, loc, cache_k): the (n, 512) rows, no freqs_cis.

Neither door is a set_kv_buffer or set_mla_kv_buffer call, so the source census holds no shapes
of them and the release driver (backends/real_code.py) does not stop at them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from backends.context import WriteRequest
from backends.entry import EXTEND_AND_DECODE, ValueScope, register_backend
from pools.kinds.composite import DSV4, DSV4_HISPARSE_C4, DSV4_UNIFORM_FP8
from pools.kinds.fixed_geometry import DSV4_NOPE_DIM
from pools.kinds.spec import names

# The pool-sized set but what these calls ignore: scales (none passed), full_loc and the physical
# mark (a bare loc), cross-attention (none in MLA models); the release's interpreted V4 store costs
# about a second a scenario, so these would be time spent judging nothing new.
DSV4_FOCUS = {
    "extend": ("prefill", "decode", "padded-narrowed", "int32-page64", "reach")
    + ("extreme-scaled", "special-values", "nan-padding"),
    "decode": ("decode", "small-decode"),
}
TILE, FP8_MAX, EPS = 64, 448.0, 1e-8


@dataclass
class NopeFp8RopeBf16Pack:
    """kernels/ops/kvcache/dsv4_main_kv_store.py's pack: its fields and its shape asserts."""

    k_nope_fp8: torch.Tensor
    k_rope_bf16: torch.Tensor
    scale_k_nope_ue8m0: torch.Tensor

    def __post_init__(self) -> None:
        assert self.k_nope_fp8.shape[-1] == 448
        assert self.k_rope_bf16.shape[-1] == 64
        assert self.scale_k_nope_ue8m0.shape[-1] == 7


def quantise_pack(k: torch.Tensor) -> NopeFp8RopeBf16Pack:
    """quant_to_nope_fp8_rope_bf16_pack_triton on `k` (tokens, 1, 512), as its callers hand it:
    reshaped to (tokens, 512) and cast to bf16."""
    latent = k.reshape(k.shape[0], -1).to(torch.bfloat16).contiguous()
    tiles = latent[:, :DSV4_NOPE_DIM].float().reshape(len(latent), -1, TILE)
    max_abs = torch.clamp_min(tiles.abs().amax(dim=-1, keepdim=True), EPS)
    exponent = torch.ceil(torch.log2(max_abs / FP8_MAX))
    scaled = tiles * (1.0 / torch.exp2(exponent))
    nope = torch.clamp(scaled, -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return NopeFp8RopeBf16Pack(
        k_nope_fp8=nope.reshape(len(latent), DSV4_NOPE_DIM).contiguous(),
        k_rope_bf16=latent[:, DSV4_NOPE_DIM:].contiguous(),
        scale_k_nope_ue8m0=(exponent.squeeze(-1).to(torch.int32) + 127).to(torch.uint8),
    )


@register_backend(
    name="dsv4",
    order=101,
    device_type="cuda",
    pool_kinds=names(DSV4, DSV4_HISPARSE_C4),
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    dtypes=("fp8_e4m3",),
    mla_input="latent",
    focus=DSV4_FOCUS,
    real_code_gap="DeepSeekV4TokenToKVPool needs the runtime's published config to construct, "
    "and the release driver stops only at set_kv_buffer and set_mla_kv_buffer",
    summary="the layer's latent K quantised to a NopeFp8RopeBf16Pack (fp8 NoPE with UE8M0 tile "
    "scales, bf16 RoPE), then set_key_buffer(layer_id, loc, pack) with the bare loc",
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    pack = quantise_pack(req.k)
    req.pool.set_key_buffer(req.layer.layer_id, req.forward_batch.out_cache_loc, pack)


@register_backend(
    name="dsv4_trtllm",
    order=102,
    device_type="cuda",
    pool_kinds=names(DSV4_UNIFORM_FP8),
    modes=EXTEND_AND_DECODE,
    eras=("current",),
    dtypes=("fp8_e4m3",),
    mla_input="latent",
    focus=DSV4_FOCUS,
    value_scope=ValueScope(
        names(DSV4_UNIFORM_FP8),
        "the latent row (nope ++ rope) cast to e4m3, no scales",
        scaled=False,
    ),
    real_code_gap="compressor_trtllm.py writes through DeepSeekV4TokenToKVPool, which needs the "
    "runtime's published config to construct",
    summary="the compressor's (n, 512) latent rows to set_key_buffer_fused(layer_id, loc, "
    "cache_k), no freqs_cis",
)
def write_uniform(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    cache_k = req.k.reshape(req.k.shape[0], -1)
    req.pool.set_key_buffer_fused(req.layer.layer_id, req.forward_batch.out_cache_loc, cache_k)
