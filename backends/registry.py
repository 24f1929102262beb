"""The backend registry: every call site the harness can drive, declared as data.

Each entry says where the backend runs natively, which pool kinds, storage dtypes and modes it
writes, which eras it has call sites for, how MLA inputs reach it (nope and rope apart, or the
latent row), its known divergences between eras (reason and PR) and its skips (reason).
Call-site research per release: /work/notes/backends.md; docs/backends.md summarises it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from backends import (aiter, ascend, context_parallel, fa3, flashinfer, flashinfer_mla, flashmla,
                      intel_amx, musa, plain, torch_native, trtllm_mha, trtllm_mla, triton, xpu)
from backends import skips as S
from backends.context import WriteRequest
from backends.skips import BackendSkip
from backends.divergences import BACKEND_DIVERGENCES, KnownDivergence
from pools.dtypes import DTYPES
from scenarios.model import Scenario

POOL_KINDS = ("mha", "mla", "swa_mha", "swa_mla")
# The layout kinds (pools/layouts/kinds.py) each backend writes in SGLang. `plain` writes MLA
# through set_kv_buffer(latent, v), which on an NPU MLA pool means (nope, rope): npu_mla goes
# through plain_mla and ascend only.
PLAIN_LAYOUT_KINDS = ("mha_fp4", "mla_fp4", "mha_hnd", "npu_mha", "mha_aiter5d")
PLAIN_MLA_LAYOUT_KINDS = ("mla_fp4", "npu_mla")
# The layout kinds are about where bytes land, not about casts (the base kinds cover every dtype):
# bf16 and one fp8, and FP4 pools (whose geometry dtype is the caller's) bf16 only.
LAYOUT_DTYPES = ("bf16", "fp8_e4m3")


def _layout_dtype_outside_subset(scenario: Scenario, mode: str) -> bool:
    g = scenario.geometry
    if g.pool not in PLAIN_LAYOUT_KINDS + PLAIN_MLA_LAYOUT_KINDS:
        return False
    return g.dtype != "bf16" if g.is_fp4 else g.dtype not in LAYOUT_DTYPES


LAYOUT_DTYPE_SUBSET = BackendSkip(
    "layout-dtype-subset", "layout pool kinds on dtypes other than bf16 and fp8_e4m3 (FP4: bf16)",
    "the layout kinds test where a slot's bytes land; every cast is covered by the base kinds, and "
    "an FP4 pool's dtype is packed e2m1 whatever the caller's", _layout_dtype_outside_subset)
ALL_ERAS = ("legacy", "kwarg", "bundled", "current")
ALL_DTYPES = tuple(DTYPES)
BOTH = ("extend", "decode")
MHA, MLA = ("mha", "swa_mha"), ("mla",)
# Backend quirks do not depend on the storage dtype (a scaled scenario's fp32 input already
# exercises the in-place division), so most backends run bf16 only; fp8 where a site branches on it.
BF16, BF16_FP8 = ("bf16",), ("bf16", "fp8_e4m3")

WriteFn = Callable[[WriteRequest, str, str], None]

# The builtin scenarios a backend runs per mode in the default matrix (scenarios/builtin.py
# `_small`): two small layers that reach every branch of its call sites (scale kinds, narrowing,
# cross-attention). Loc dtypes, page sizes and long prefills are the pools' business and are
# covered by `plain` over the whole matrix. Decode has no cross-attention write (k is None there).
EXTEND_FOCUS = ("small-scaled", "small-param-none", "small-narrowed", "small-cross")
FOCUS = {"extend": EXTEND_FOCUS, "extend_ragged": EXTEND_FOCUS, "decode": ("small-decode",)}
# Every name default_scenarios gives (tests/test_backends.py keeps this in step): a builtin
# scenario outside a backend's focus is skipped; user and Hypothesis scenarios always run.
BUILTIN_SCENARIOS = ("prefill", "decode", "padded-narrowed", "int32-page64", "scaled-float",
                     "scaled-tensor", "small-scaled", "small-param-none", "small-narrowed",
                     "small-decode", "small-cross")
# `plain` runs the pool-sized set and, of the small set, only what it adds: a scale kind and
# cross-attention.
PLAIN_FOCUS = {"extend": BUILTIN_SCENARIOS[:6] + ("small-param-none", "small-cross")}
OUT_OF_FOCUS = BackendSkip(
    "out-of-focus", "builtin scenarios outside the backend's focus for the mode",
    "the default matrix gives backends small scenarios that reach every branch of their call "
    "sites; loc dtypes, page sizes and long prefills are covered by `plain`", S.never)


@dataclass(frozen=True)
class Backend:
    name: str
    device_type: str
    pool_kinds: tuple[str, ...]
    modes: tuple[str, ...]
    write: WriteFn
    eras: tuple[str, ...] = ALL_ERAS
    summary: str = ""
    divergences: tuple[KnownDivergence, ...] = field(default=())
    skips: tuple[BackendSkip, ...] = field(default=())
    dtypes: tuple[str, ...] = ALL_DTYPES
    mla_input: str = "split"      # split: k = nope, k_rope = rope; latent: k = nope ++ rope
    focus: Optional[dict[str, tuple[str, ...]]] = field(default_factory=lambda: FOCUS)

    def skip_for(self, scenario: Scenario, mode: str) -> Optional[BackendSkip]:
        """The declared skip that removes this (scenario, mode) cell, if any."""
        if (self.focus is not None and scenario.name in BUILTIN_SCENARIOS
                and scenario.name not in self.focus.get(mode, ())):
            return OUT_OF_FOCUS
        return next((skip for skip in self.skips if skip.applies(scenario, mode)), None)

    def describe(self) -> dict:
        """Plain data for reports and `kvh matrix`."""
        return {"name": self.name, "device_type": self.device_type,
                "pool_kinds": list(self.pool_kinds), "modes": list(self.modes),
                "eras": list(self.eras), "dtypes": list(self.dtypes), "mla_input": self.mla_input,
                "focus": None if self.focus is None else {m: list(n) for m, n in self.focus.items()},
                "summary": self.summary,
                "divergences": [{"name": d.name, "eras": list(d.eras), "oracles": sorted(d.accepts),
                                 "reason": d.reason, "pr": d.pr} for d in self.divergences],
                "skips": [skip.describe() for skip in self.skips]}


TRTLLM_FP8 = BackendSkip(
    "fused-fp8-write", "fp8 KV caches", "with an fp8 cache a fused kernel (fused_fp8_set_kv_buffer, "
    "0.5.23 fused_fp8_qkv_kv_cache) writes the cache and set_kv_buffer is never called; the "
    "set_kv_buffer path is modelled", S.fp8_cache, "trtllm_mha_backend.py")

BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend("plain", "any", POOL_KINDS + PLAIN_LAYOUT_KINDS, ("extend",), plain.write_set_kv_buffer,
                focus=PLAIN_FOCUS, skips=(LAYOUT_DTYPE_SUBSET,), mla_input="latent",
                summary="each era's canonical set_kv_buffer call, no backend quirks"),
        Backend("plain_mla", "any", ("mla", "swa_mla") + PLAIN_MLA_LAYOUT_KINDS, ("extend",),
                plain.write_set_mla_kv_buffer, focus=PLAIN_FOCUS, skips=(LAYOUT_DTYPE_SUBSET,),
                summary="each era's canonical set_mla_kv_buffer call (nope, rope)"),
        Backend("fa3", "cuda", MHA + MLA + ("mha_fp4", "mla_fp4"), BOTH, fa3.write, dtypes=BF16,
                summary="MHA set_kv_buffer with layer scales, MLA set_mla_kv_buffer; encoder loc "
                        "paired with the decoder's SWA loc; 0.5.23 KVWriteLoc.for_layer",
                skips=(BackendSkip("fused-rope-store", "0.5.23 mimo_v2/dspark", "the model stores "
                                   "K/V itself (get_fused_kv_write_buffers) and calls attention with "
                                   "save_kv_cache=False: no pool call to model", S.never,
                                   "flashattention_backend.py 0.5.23"),)),
        Backend("triton", "cuda", MHA + MLA, BOTH, triton.write, dtypes=BF16, mla_input="latent",
                summary="out_cache_loc only; extend clones (MHA) or divides a clone (MLA); decode "
                        "divides the caller's MLA k in place",
                skips=(S.no_cross_attention("triton", "triton_backend.py"),
                       BackendSkip("dense-fp8-chunked", "0.5.23 fp8 q/k/v, 12 heads, prefix cache",
                                   "_forward_dense_fp8_chunked_mha writes nothing", S.never,
                                   "triton_backend.py 0.5.23"))),
        Backend("flashinfer", "cuda", MHA, ("extend", "extend_ragged", "decode"), flashinfer.write,
                dtypes=BF16,
                summary="paged extend writes before attention, ragged extend after; 0.5.23 "
                        "_kv_write_scales",
                skips=(BackendSkip("global-scale-quant", "FP4 KV caches", "0.5.23 passes (None, "
                                   "None) when the quant method supplies global scales; no FP4 "
                                   "pool kind yet (modelled by Metadata.kv_quant_needs_global_scale)",
                                   S.never, "flashinfer_backend.py 0.5.23"),)),
        Backend("trtllm_mha", "cuda", MHA + ("mha_hnd",), BOTH, trtllm_mha.write, dtypes=BF16,
                summary="out_cache_loc only; 0.5.23 KVWriteLoc.for_batch",
                skips=(S.no_cross_attention("trtllm_mha", "trtllm_mha_backend.py"), TRTLLM_FP8)),
        Backend("aiter", "rocm", MHA[:1] + MLA + ("mha_aiter5d",), BOTH, aiter.write, dtypes=BF16_FP8,
                mla_input="latent", divergences=BACKEND_DIVERGENCES["aiter"],
                summary="fp8 descales in extend; decode writes out_cache_loc and, until 0.5.23, "
                        "no scales; MLA latent row through set_kv_buffer",
                skips=(BackendSkip("decode-cross-attention", "decode with cross-attention layers",
                                   "decode writes out_cache_loc on every layer (only extend uses "
                                   "the encoder loc)", S.decode_cross_attention, "aiter_backend.py"),
                       BackendSkip("unified-swa", "SWA pools", "a SWA pool forces unified "
                                   "attention, whose reshape_and_cache kernel translates with the "
                                   "mapping itself and bypasses set_kv_buffer", S.swa_pool,
                                   "aiter_backend.py"))),
        Backend("xpu", "xpu", MHA + MLA, BOTH, xpu.write, dtypes=BF16,
                summary="fa3's calls, bare KVWriteLoc; MLA decode derives k_rope from k until 0.5.14"),
        Backend("musa", "musa", MHA + MLA, BOTH, musa.write, dtypes=BF16,
                summary="fa3's calls, bare KVWriteLoc, bare MLA loc in every release"),
        Backend("torch_native", "cpu", MHA + MLA, BOTH, torch_native.write, dtypes=BF16,
                mla_input="latent", summary="no scales; encoder loc paired with the decoder's SWA loc"),
        Backend("intel_amx", "cpu", MHA, BOTH, intel_amx.write, dtypes=BF16_FP8,
                divergences=BACKEND_DIVERGENCES["intel_amx"],
                summary="extend: no scales until 0.5.23 (k_scale_float on fp8); decode: the "
                        "attention kernel stores K/V itself",
                skips=(BackendSkip("legacy-cross-at-out-cache-loc", "scenarios with cross-attention "
                                   "layers", "0.5.12 wrote cross-attention K/V at out_cache_loc "
                                   "(0.5.13 moved it to the encoder loc), so the legacy baseline "
                                   "is wrong by design there", S.cross_attention,
                                   "intel_amx_backend.py 0.5.12"),
                       BackendSkip("decode-kernel-swa", "decode on SWA pools", "until 0.5.14 the "
                                   "decode kernel stored SWA layers at the untranslated loc, so the "
                                   "legacy baseline is wrong by design there",
                                   S.decode_on(S.swa_pool), "intel_amx_backend.py 0.5.12-0.5.14"),
                       BackendSkip("decode-kernel-fp8", "decode on fp8 caches", "the CPU decode "
                                   "kernel has no fp8 store before 0.5.23 routed fp8 to set_kv_buffer",
                                   S.decode_on(S.fp8_cache), "intel_amx_backend.py 0.5.23"),
                       BackendSkip("mla-current-only", "MLA pools", "the MLA write exists only in "
                                   "0.5.23: no older call site to compare", S.never,
                                   "intel_amx_backend.py 0.5.23"))),
        Backend("ascend", "npu", MHA + MLA + ("npu_mha", "npu_mla"), BOTH, ascend.write, dtypes=BF16,
                summary="no scales; SWA loc dropped on cross-attention; MLA (nope, rope) through "
                        "the NPU pool's set_kv_buffer"),
        Backend("flashinfer_mla", "cuda", MLA, BOTH, flashinfer_mla.write, dtypes=BF16,
                summary="set_mla_kv_buffer with k_rope, set_kv_buffer without; out_cache_loc"),
        Backend("flashmla", "cuda", MLA, BOTH, flashmla.write, dtypes=BF16, mla_input="latent",
                summary="latent row through set_kv_buffer; out_cache_loc"),
        Backend("trtllm_mla", "cuda", MLA, BOTH, trtllm_mla.write, dtypes=BF16,
                summary="set_mla_kv_buffer only; out_cache_loc",
                skips=(BackendSkip("fp8-quantize-rope", "fp8 KV caches", "the fp8 path quantizes "
                                   "and ropes k before the write, and 0.5.23's fused concat kernels "
                                   "bypass the pool", S.fp8_cache, "trtllm_mla_backend.py"),)),
        Backend("cp", "cuda", MHA, ("extend",), context_parallel.write, dtypes=BF16,
                summary="context-parallel all-gather write, N zigzag ranks in one process",
                skips=(BackendSkip("cp-mla", "MLA pools", "only 0.5.23 writes MLA under CP "
                                   "(materialize_full_mla_kv); 0.5.12 fa3 passed scales to the MLA "
                                   "set_kv_buffer, which takes none", S.never, "layers/cp/zigzag.py"),)),
    )
}


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}") from None
