"""The mutant catalog, as data: one entry per planted fault, with the regression it models.

Each entry's module (mutants/zoo/) is an SGLang-compatible SUT: a correct base_* pool module of
one era with exactly one fault, or with a faulty call site declared in `BACKEND_OVERRIDES`.
`kvh mutants` runs the differential suite on each, restricted to the entry's pool kinds, dtypes
and backends, in that order (the first backend is the one expected to kill it). `models` names
the SGLang PR a fault comes from, or the slip it stands for. An entry with an `equivalent`
argument has no observable difference and is not run.
"""

from __future__ import annotations

from mutants.entry import FAULT_CLASSES, Mutant
from mutants.reused import REUSED

__all__ = ["CATALOG", "FAULT_CLASSES", "Mutant", "mutant_named"]

MHA, MLA, SWA_MHA, SWA_MLA = ("mha",), ("mla",), ("swa_mha",), ("swa_mla",)
FP8 = ("fp8_e4m3",)

_OWN: tuple[Mutant, ...] = (
    # unwrap: a door that does not unwrap KVWriteLoc, in each pool and method
    Mutant(
        "mla_set_kv_no_unwrap",
        "unwrap",
        "current",
        MLA,
        ("triton", "flashmla"),
        "#27695 (review): MLA pools did not unwrap KVWriteLoc; scaled MLA prefill in triton raised",
    ),
    Mutant(
        "mla_set_mla_no_unwrap",
        "unwrap",
        "current",  # in bundled it is the declared divergence mla-nope-rope-no-unwrap
        MLA,
        ("plain_mla", "trtllm_mla"),
        "#27695 (review): the same missing unwrap in the set_mla_kv_buffer door",
    ),
    Mutant(
        "mha_no_unwrap",
        "unwrap",
        "current",
        MHA,
        ("intel_amx", "fa3"),
        "slip: #27695's missing unwrap in the MHA pool",
    ),
    Mutant(
        "swa_no_unwrap",
        "unwrap",
        "bundled",
        SWA_MHA,
        ("xpu", "plain"),
        "slip: #27695's SWAKVPool kept 0.5.12's own translation and never unwrapped KVWriteLoc",
    ),
    Mutant(
        "swa_mla_no_unwrap",
        "unwrap",
        "current",
        SWA_MLA,
        ("plain_mla",),
        "slip: #27695's missing unwrap in SWAKVPool.set_mla_kv_buffer (sub-pool unwraps loc only)",
    ),
    # swa-routing
    Mutant(
        "swa_untranslated",
        "swa-routing",
        "legacy",
        SWA_MHA,
        ("ascend", "plain"),
        "slip: a 0.5.12 SWA layer written at the untranslated full-pool loc",
    ),
    Mutant(
        "swa_layers_swapped",
        "swa-routing",
        "kwarg",
        SWA_MHA,
        ("trtllm_mha", "plain"),
        "slip: layers_mapping built with the is_swa flags inverted",
    ),
    Mutant(
        "swa_full_layer_uses_swa_loc",
        "swa-routing",
        "kwarg",
        SWA_MHA,
        ("musa", "plain"),
        "slip: #27617's swa_loc= used on full layers whenever a backend passes it",
    ),
    Mutant(
        "swa_out_of_window_unmasked",
        "swa-routing",
        "legacy",
        SWA_MHA,
        ("plain",),
        "slip: out-of-window tokens (mapped to the sink) written at their full-pool slot",
    ),
    # narrowing
    Mutant(
        "no_post_init_cut",
        "narrowing",
        "current",
        SWA_MHA,
        ("plain", "fa3"),
        "#29460: swa_loc from the padded out_cache_loc, loc narrowed by piecewise graphs",
    ),
    Mutant(
        "cut_from_wrong_end",
        "narrowing",
        "current",
        SWA_MHA,
        ("trtllm_mha", "plain"),
        "slip: #29460's cut taken from the tail, keeping the padding's SWA ids",
    ),
    # inside a known divergence's scenarios: a divergence must never excuse them
    Mutant(
        "narrowed_full_layer_flip",
        "narrowing",
        "kwarg",
        SWA_MHA,
        ("plain",),
        "slip: full-layer rows corrupted only while the forward is narrowed, inside #29460's "
        "scenarios, just before the SWA write raises",
    ),
    Mutant(
        "narrowed_swa_wrong_error",
        "narrowing",
        "bundled",
        SWA_MHA,
        ("plain",),
        "slip: inside #29460's scenarios, the narrowed SWA write raises a ValueError of its own "
        "where the era's pool raises the store's IndexError",
    ),
    # scale
    Mutant(
        "mha_scale_ignored",
        "scale",
        "current",
        MHA,
        ("aiter", "plain"),
        "#18882: k_scale/v_scale not applied, fp8 values stored unscaled",
        FP8,
    ),
    Mutant(
        "mha_scale_multiplied",
        "scale",
        "legacy",
        MHA,
        ("plain",),
        "slip: the scale multiplied where SGLang divides",
        FP8,
    ),
    Mutant(
        "mha_scale_not_in_place",
        "scale",
        "kwarg",
        MHA,
        ("plain",),
        "slip: division on copies; SGLang divides the caller's k/v in place (triton clones for it)",
        FP8,
    ),
    Mutant(
        "mha_v_scaled_by_k", "scale", "bundled", MHA, ("plain",), "slip: v divided by k_scale", FP8
    ),
    Mutant(
        "swa_scale_default_none",
        "scale",
        "current",
        SWA_MHA,
        ("torch_native",),
        "slip: SWAKVPool's scale defaults None instead of 1.0",
        equivalent="A call site that passes no scales gets 1.0 from SWAKVPool and the sub-pool "
        "divides k/v by 1.0 in place; with None it skips the division. x / 1.0 == x bit for bit "
        "in IEEE arithmetic for every finite value, ±0, ±inf and NaN (torch produces only quiet "
        "NaNs), so neither the stored bytes nor the caller's tensors can differ.",
    ),
    Mutant(
        "triton_mla_no_clone",
        "scale",
        "current",
        MLA,
        ("triton",),
        "slip: triton's scaled MLA prefill divides the caller's k in place instead of a clone",
    ),
    Mutant(
        "triton_mla_fp8_no_division",
        "scale",
        "current",
        MLA,
        ("triton",),
        "slip: triton's scaled MLA prefill on an fp8 cache writes k without dividing it by "
        "k_scale, #34765's path (FP8 MLA written with unit scale)",
        FP8,
    ),
    Mutant(
        "aiter_no_scales",
        "scale",
        "current",
        MHA,
        ("aiter",),
        "slip: aiter's extend passing no descales, #18882's shape in another backend",
        FP8,
    ),
    Mutant(
        "aiter_decode_no_descales",
        "scale",
        "current",
        MHA,
        ("aiter",),
        "slip: 0.5.23's aiter decode keeping 0.5.14's call without descales (the `changed` "
        "divergence aiter-decode-descales: old behaviour in the new era)",
        FP8,
    ),
    # layer-id
    Mutant(
        "sub_pool_ignores_override",
        "layer-id",
        "current",
        SWA_MHA,
        ("fa3", "plain"),
        "slip: the MHA pool ignores layer_id_override, which composite pools pass with layer=None",
    ),
    Mutant(
        "swa_global_layer_id",
        "layer-id",
        "legacy",
        SWA_MHA,
        ("plain",),
        "slip: SWAKVPool passes the global layer id to its sub-pool instead of the local one",
    ),
    Mutant(
        "swa_mla_local_ids_shared",
        "layer-id",
        "kwarg",
        SWA_MLA,
        ("plain",),
        "slip: local layer ids counted across both sub-pools",
    ),
    # layout and page offset
    Mutant(
        "mha_kv_swapped",
        "layout",
        "bundled",
        MHA,
        ("flashinfer", "plain"),
        "slip: k stored in the value buffer and v in the key buffer",
    ),
    Mutant(
        "mla_rope_first",
        "layout",
        "current",
        MLA,
        ("trtllm_mla", "plain_mla"),
        "slip: the MLA row laid out rope ++ nope",
    ),
    Mutant(
        "mla_nope_block_tail",
        "layout",
        "legacy",
        MLA,
        ("flashinfer_mla", "plain_mla"),
        "#15522: nope copied in blocks masked by the row width; nope_dim 528 ran over the rope",
    ),
    Mutant(
        "mla_set_kv_stores_cache_v",
        "layout",
        "bundled",
        MLA,
        ("flashmla", "plain"),
        "slip: MLA set_kv_buffer stores its cache_v argument as the row",
    ),
    Mutant(
        "page_shift",
        "layout",
        "kwarg",
        MHA,
        ("xpu", "plain"),
        "slip: the padding page reserved twice, every row one page above its slot",
    ),
    # dtype and cast
    Mutant(
        "fp8_value_cast",
        "dtype-cast",
        "legacy",
        MHA,
        ("plain",),
        "slip: fp8 stored by value conversion to uint8 instead of a bit view",
        FP8,
    ),
    Mutant(
        "mla_fp8_wrong_format",
        "dtype-cast",
        "current",
        MLA,
        ("plain_mla",),
        "slip: an e5m2 MLA cache cast to e4m3",
        ("fp8_e5m2",),
    ),
    Mutant(
        "swa_mla_fp8_value_cast",
        "dtype-cast",
        "kwarg",
        SWA_MLA,
        ("plain",),
        "slip: fp8 MLA sub-pool rows stored by value conversion",
        FP8,
    ),
    Mutant(
        "shared_cast_truncates",
        "dtype-cast",
        "current",
        MHA,
        ("plain",),
        "slip: the builtin engines' shared cast step (StoreEngine.prepare) rounding toward "
        "zero instead of to nearest, planted in a torch engine only",
        FP8,
    ),
    # cross-attention
    Mutant(
        "torch_native_cross_at_out_cache_loc",
        "cross-attention",
        "current",
        MHA,
        ("torch_native",),
        "#8622 #8675: torch_native wrote cross-attention K/V at out_cache_loc",
    ),
    Mutant(
        "for_layer_ignores_cross",
        "cross-attention",
        "current",
        MHA,
        ("fa3", "plain"),
        "slip: #8622/#8675's bug in KVWriteLoc.for_layer (encoder layers get out_cache_loc)",
    ),
    # translation caching
    Mutant(
        "translation_cached_by_pointer",
        "translation-cache",
        "legacy",
        SWA_MHA,
        ("plain",),
        "#24743: a graph replay through the same static loc buffer got the previous "
        "replay's SWA ids",
    ),
    Mutant(
        "mapping_snapshot",
        "translation-cache",
        "legacy",
        SWA_MHA,
        ("musa", "plain"),
        "slip: register_mapping keeps a copy; the allocator's in-place updates never reach it",
    ),
    # context parallel
    Mutant(
        "cp_no_zigzag_restore",
        "cp-gather",
        "current",
        MHA,
        ("cp",),
        "slip: CP shares written in zigzag order, token order not restored",
    ),
    # a speculative draft's commit
    Mutant(
        "prefix_valid_writes_all",
        "draft-commit",
        "current",
        MHA,
        ("dspark",),
        "slip: set_kv_buffer_prefix_valid ignores commit_lens; rejected draft tokens are written",
        dtypes=FP8,  # the regression draft-commit-fp8 is the draft commit every profile runs
    ),
    # a decode-context-parallel rank's write
    Mutant(
        "dcp_mask_ignored",
        "dcp-rank",
        "current",
        MHA,
        ("triton_dcp",),
        "slip: the MHA door drops dcp_kv_mask; a DCP rank stores the other ranks' tokens",
    ),
    Mutant(
        "mla_dcp_rank_ignored",
        "dcp-rank",
        "current",
        MLA,
        ("flashinfer_mla_dcp",),
        "slip: the MLA pool drops its DCP owner rule; a rank stores every rank's tokens",
    ),
)
# Each fault once more through the backends a later census claimed (mutants/reused.py).
CATALOG: tuple[Mutant, ...] = _OWN + REUSED


def mutant_named(name: str) -> Mutant:
    for mutant in CATALOG:
        if mutant.name == name:
            return mutant
    raise ValueError(f"unknown mutant {name!r}; choose from {', '.join(m.name for m in CATALOG)}")
