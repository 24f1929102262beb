"""Named regression scenarios: one hand-written scenario per SGLang write-path bug, citing its PR.

They run in every profile of `kvh run` (before the Hypothesis examples) and in the test suite.
Each is the smallest shape that would have shown the bug on a pool or backend that has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pools.kinds.registry import KINDS
from pools.kinds.token_major import MHA, MLA, SWA_MHA
from scenarios.lifecycle import PoolLife, View
from scenarios.model import Forward, Geometry, Scale, Scenario


@dataclass(frozen=True)
class Regression:
    name: str
    pr: str
    bug: str
    build: Callable[[], Scenario]

    def scenario(self) -> Scenario:
        scenario = self.build()
        scenario.name = f"regression-{self.name}"
        return scenario


def _mha(dtype: str = "bf16", pool: str = MHA.name, **fields) -> Geometry:
    swa = [1, 2] if KINDS[pool].swa else []
    return Geometry(
        pool=pool,
        dtype=dtype,
        size=128,
        page_size=16,
        layer_num=4,
        head_num=2,
        head_dim=64,
        swa_layer_ids=swa,
        size_swa=64 if swa else 0,
        **fields,
    )


def _mla(kv_lora_rank: int = 512, rope: int = 64) -> Geometry:
    return Geometry(
        pool=MLA.name,
        dtype="bf16",
        size=64,
        page_size=16,
        layer_num=2,
        kv_lora_rank=kv_lora_rank,
        qk_rope_head_dim=rope,
    )


def _one_forward(g: Geometry, tokens: int, seed: int, window: int = 0, **fields) -> Scenario:
    life = PoolLife(g)
    life.forward(life.grow(0, tokens, [1, 3], window))
    return life.scenario(seed, "", **fields)


def _mla_scaled_kvwriteloc() -> Scenario:
    return _one_forward(
        _mla(),
        20,
        27695,
        input_dtype="fp32",
        k_scale=Scale("float", 0.5),
        v_scale=Scale("float", 0.5),
    )


def _narrowed_swa_loc() -> Scenario:
    life = PoolLife(_mha(pool=SWA_MHA.name))
    life.forward(life.grow(0, 9, [2], window=9), padding=7, narrow=9)
    return life.scenario(29460, "")


def _stale_padding_swa_ids() -> Scenario:
    """A graph replay after a bigger one: the static loc buffer still holds the previous ids."""
    life = PoolLife(_mha(pool=SWA_MHA.name))
    storage = life.new_storage()
    life.forward(life.grow(0, 12, [1], window=12), view=View(storage))
    life.forward(life.grow(1, 3, [4], window=3), padding=9, view=View(storage))
    return life.scenario(24743, "")


def _fp8_scales_dropped() -> Scenario:
    return _one_forward(
        _mha("fp8_e4m3"),
        24,
        18882,
        input_dtype="bf16",
        k_scale=Scale("float", 0.5),
        v_scale=Scale("tensor", 2.0),
    )


def _cross_attention_encoder_loc() -> Scenario:
    g = _mha()
    life = PoolLife(g)
    decoder = life.grow(0, 10, [0], 0)
    encoder = life.grow(1, 10, [5], 0)
    life.forward(decoder, encoder_loc=encoder, cross_layers=(0, 2))
    return life.scenario(8622, "")


def _mla_nope_528() -> Scenario:
    return _one_forward(_mla(kv_lora_rank=528), 40, 15522)


def _draft_commit_fp8() -> Scenario:
    """Three drafts of eight tokens on an fp8 cache, 8, 5 and 0 of them committed, scaled."""
    commit = Forward(list(range(16, 40)), commit_lens=[8, 5, 0])
    return Scenario(
        geometry=_mha("fp8_e4m3"),
        forwards=[commit],
        seed=22,
        input_dtype="bf16",
        k_scale=Scale("float", 0.5),
        v_scale=Scale("float", 2.0),
    )


REGRESSIONS: tuple[Regression, ...] = (
    Regression(
        "mla-scaled-kvwriteloc",
        "#27695",
        "MLA pools did not unwrap KVWriteLoc: scaled "
        "MLA prefill (triton) and MLA decode (aiter) raised",
        _mla_scaled_kvwriteloc,
    ),
    Regression(
        "narrowed-swa-loc",
        "#29460",
        "swa_loc came from the padded out_cache_loc while "
        "piecewise graphs narrowed loc: the lengths differed",
        _narrowed_swa_loc,
    ),
    Regression(
        "stale-padding-swa-ids",
        "#24743",
        "graph padding kept the previous replay's SWA "
        "ids, so padded tokens overwrote live SWA slots",
        _stale_padding_swa_ids,
    ),
    Regression(
        "fp8-scales-dropped",
        "#18882",
        "the triton backend passed no k_scale/v_scale: fp8 values were stored unscaled",
        _fp8_scales_dropped,
    ),
    Regression(
        "cross-attention-encoder-loc",
        "#8622 #8675",
        "torch_native wrote cross-attention K/V at out_cache_loc instead of encoder_out_cache_loc",
        _cross_attention_encoder_loc,
    ),
    Regression(
        "mla-nope-528",
        "#15522",
        "an MLA kernel assumed nope_dim a multiple of its block: "
        "with 528 it wrote across the nope/rope boundary",
        _mla_nope_528,
    ),
    Regression(
        "draft-commit-fp8",
        "no PR (0.5.14-0.5.21; gone in 0.5.22)",
        "set_kv_buffer_prefix_valid's CPU path cast the draft's rows to fp8 and then handed "
        "them to set_kv_buffer, which cast the uint8 view again (wrong bytes) or divided it "
        "(raised)",
        _draft_commit_fp8,
    ),
)


def regression_scenarios(pool: str, dtype: str) -> list[Scenario]:
    scenarios = [regression.scenario() for regression in REGRESSIONS]
    return [s for s in scenarios if (s.geometry.pool, s.geometry.dtype) == (pool, dtype)]
