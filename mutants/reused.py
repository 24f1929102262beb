"""Catalogued faults tried first through a second backend: each entry's `sut` is another
entry's zoo module, so every backend that writes the base pool kinds is the expected killer of
some mutant (tests/test_mutants.py) without a copy of the fault."""

from __future__ import annotations

from mutants.entry import Mutant

MHA, MLA = ("mha",), ("mla",)
FP8 = ("fp8_e4m3",)

REUSED: tuple[Mutant, ...] = (
    # The same faults through the backends added for 0.5.23's unclaimed files (each the first
    # tried, as every backend that writes the base kinds is of some mutant).
    Mutant(
        "torch_flex_kv_swapped",
        "layout",
        "bundled",
        MHA,
        ("torch_flex", "plain"),
        "slip: k stored in the value buffer and v in the key buffer (torch_flex's bare loc)",
        sut="mutants.zoo.mha_kv_swapped",
    ),
    Mutant(
        "wave_page_shift",
        "layout",
        "kwarg",
        MHA,
        ("wave", "plain"),
        "slip: the padding page reserved twice, every row one page above its slot (wave)",
        sut="mutants.zoo.page_shift",
    ),
    Mutant(
        "cutedsl_mla_rope_first",
        "layout",
        "current",
        MLA,
        ("cutedsl_mla", "plain_mla"),
        "slip: the MLA row laid out rope ++ nope (cutedsl_mla's trtllm-style call)",
        sut="mutants.zoo.mla_rope_first",
    ),
    Mutant(
        "hpc_ops_scale_ignored",
        "scale",
        "current",
        MHA,
        ("hpc_ops", "plain"),
        "#18882: k_scale/v_scale not applied, fp8 values stored unscaled (hpc_ops passes them)",
        FP8,
        sut="mutants.zoo.mha_scale_ignored",
    ),
    # The same faults through the backends added for 0.5.12-0.5.14's unclaimed files (each the
    # first tried; their releases have no current era, so each fault is one of an older era).
    Mutant(
        "dual_chunk_scale_multiplied",
        "scale",
        "legacy",
        MHA,
        ("dual_chunk", "plain"),
        "slip: the scale multiplied where SGLang divides (dual_chunk passes the layer's scales)",
        FP8,
        sut="mutants.zoo.mha_scale_multiplied",
    ),
    Mutant(
        "cutlass_mla_nope_block_tail",
        "layout",
        "legacy",
        MLA,
        ("cutlass_mla", "plain_mla"),
        "#15522: nope copied in blocks masked by the row width, over the rope columns "
        "(cutlass_mla's set_mla_kv_buffer call)",
        sut="mutants.zoo.mla_nope_block_tail",
    ),
    Mutant(
        "tokenspeed_mla_nope_block_tail",
        "layout",
        "legacy",
        MLA,
        ("tokenspeed_mla", "plain_mla"),
        "#15522: nope copied in blocks masked by the row width, over the rope columns "
        "(tokenspeed_mla's trtllm-style call)",
        sut="mutants.zoo.mla_nope_block_tail",
    ),
)
