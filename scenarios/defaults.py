"""The embedded default scenarios of `kvh run`: small, seeded, and chosen to cover each era rule.

Each pool kind and dtype gets: a prefill of whole and partial pages, decode steps, a padded and
narrowed forward (the PR #29460 shape), int32 locs at page size 64, and a scaled write whose
input dtype differs from the pool dtype (in-place division, fp8 cast); then a small two-layer set
(every scale kind, narrowing, decode steps, cross-attention) that the backends run; and the
edges the profiles pin (the reach scenario, extreme and special values), which `plain` and
`plain_mla` run in every pool kind.
"""

from __future__ import annotations

import random
from dataclasses import replace

from pools.dtypes import dtype_spec
from pools.kinds.fixed_geometry import (
    DSV4_NOPE_DIM,
    DSV4_PAGE,
    DSV4_ROPE_DIM,
    NVFP4_HEAD_DIM,
    NVFP4_PAGE,
)
from pools.kinds.registry import KINDS
from scenarios.allocator import allocate, swa_mapping
from scenarios.cp_batches import cp_batches, cp_writes
from scenarios.lifecycle import PoolLife, View
from scenarios.model import (
    DSA_INDEX_KINDS,
    DSV4_KINDS,
    LINEAR_LAYER_KINDS,
    MLA_POOL_KINDS,
    NVFP4_PAGE_ROW_KINDS,
    SPARSE_INDEX_KINDS,
    Forward,
    Geometry,
    RequestSpan,
    Scale,
    Scenario,
)
from scenarios.profiles import profile_named
from scenarios.reach import reach_scenario

# The default run's reach pool fits the ci profile's budget, so it reaches what ci reaches.
REACH_POOL_BYTES = profile_named("ci").pool_bytes


def geometry(pool: str, dtype: str, page_size: int = 16, size: int = 256) -> Geometry:
    layer_num = 4
    if pool in DSA_INDEX_KINDS:  # DSA pools have 64-token pages
        page_size = 64
    if pool in DSV4_KINDS:  # a V4 pool's pages as the model's, its latent row's fixed widths
        page_size = DSV4_PAGE
    if pool in DSA_INDEX_KINDS or pool in DSV4_KINDS:
        # Whole pages, one at least: a size drawn for smaller pages (random_scenarios draws 4 to
        # 12 pages of 1, 16 or 64 slots) left no page to allocate from.
        size = max(page_size, size - size % page_size)
    if pool in NVFP4_PAGE_ROW_KINDS:  # 128-token pages only, and whole pages of slots
        page_size, size = NVFP4_PAGE, max(NVFP4_PAGE, size - size % NVFP4_PAGE)
    kind = KINDS[pool]
    swa_layer_ids = [1, 3] if kind.swa else []
    common = dict(
        pool=pool,
        dtype=dtype,
        size=size,
        page_size=page_size,
        layer_num=layer_num,
        swa_layer_ids=swa_layer_ids,
        # Two pages at least: a DSA pool's 64-token page is a small pool's whole size.
        size_swa=max(size // 2, 2 * page_size) if swa_layer_ids else 0,
        # A hybrid linear model's layers 0 and 2 are linear attention (no KV in the pool).
        linear_layer_ids=[0, 2] if pool in LINEAR_LAYER_KINDS else [],
    )
    if pool in SPARSE_INDEX_KINDS:  # dense layer 0, index K/V on 1 and 3, index K only on 2
        sparse = dict(sparse_layer_ids=[1, 2, 3], k_only_layer_ids=[2], index_head_dim=16)
        return Geometry(head_num=2, head_dim=32, **common, **sparse)
    if pool in DSV4_KINDS:
        return Geometry(kv_lora_rank=DSV4_NOPE_DIM, qk_rope_head_dim=DSV4_ROPE_DIM, **common)
    if pool in NVFP4_PAGE_ROW_KINDS:  # 128-wide heads only; two, so a swapped head shows
        return Geometry(head_num=2, head_dim=NVFP4_HEAD_DIM, **common)
    if pool in MLA_POOL_KINDS:  # rank and rope are FP4 block (16) multiples
        return Geometry(kv_lora_rank=64, qk_rope_head_dim=16, **common)
    if kind.v_as_k or kind.page_multiple > 1:  # 5-D: dims % X (8 for bf16), V as K's
        return Geometry(head_num=2, head_dim=32, **common)
    if kind.page_major:  # page_size == head_num: a swapped (head, offset) index shows
        return Geometry(head_num=page_size, head_dim=16, v_head_dim=8, **common)
    return Geometry(head_num=2, head_dim=32, v_head_dim=16, **common)


def make_scenario(
    rng: random.Random, g: Geometry, forwards: list[Forward], name: str, seed: int, **fields
) -> Scenario:
    mapping = None
    if g.kind.swa:
        written = sorted({slot for f in forwards for slot in f.loc if slot})
        mapping = swa_mapping(
            rng, g.size, g.page_size, g.size_swa, written, window=min(len(written), g.size_swa // 2)
        )
    return Scenario(
        geometry=g,
        forwards=forwards,
        seed=seed,
        mapping=mapping,
        name=name,
        stray_swa_loc=not g.kind.swa,
        **fields,
    )


def default_scenarios(pool: str, dtype: str, seed: int) -> list[Scenario]:
    rng = random.Random(f"{seed}:{pool}:{dtype}")
    g = geometry(pool, dtype)
    prefill = allocate(rng, g.size, g.page_size, 40)
    decode = allocate(rng, g.size, g.page_size, 3)
    padded = allocate(rng, g.size, g.page_size, 9) + [0] * 7
    g64 = geometry(pool, dtype, page_size=64, size=512)
    wide = allocate(rng, g64.size, g64.page_size, 70)
    fp8 = dtype_spec(dtype).is_fp8
    scaled_input = "bf16" if fp8 else "fp32"
    return (
        [
            make_scenario(rng, g, [Forward(prefill)], "prefill", seed),
            make_scenario(rng, g, [Forward([slot]) for slot in decode], "decode", seed + 1),
            make_scenario(rng, g, [Forward(padded, narrow=9)], "padded-narrowed", seed + 2),
            make_scenario(rng, g64, [Forward(wide)], "int32-page64", seed + 3, loc_dtype="int32"),
            make_scenario(
                rng,
                g,
                [Forward(prefill[:24])],
                "scaled-float",
                seed + 4,
                input_dtype=scaled_input,
                k_scale=Scale("float", 0.5),
                v_scale=Scale("float", 2.0),
            ),
            make_scenario(
                rng,
                g,
                [Forward(prefill[:24])],
                "scaled-tensor",
                seed + 5,
                input_dtype=scaled_input,
                k_scale=Scale("tensor", 0.3),
                v_scale=Scale("param", 1.7),
            ),
        ]
        + _small(rng, pool, dtype, seed + 6, scaled_input)
        + _edges(rng, g, pool, dtype, seed + 11)
        + (_loc_lives(_small_geometry(pool, dtype), seed + 19) if g.kind.swa else [])
        + (_draft_commits(rng, g, seed + 17, scaled_input) if _commits_drafts(g) else [])
        + ([_pipeline_rank(rng, g, seed + 21)] if g.kind.pipeline_rank else [])
        + (_dcp_rank(rng, g, seed + 22, scaled_input) if g.kind.dcp_rank else [])
        + (_unsaved(pool, dtype, seed + 24) if g.kind.base else [])
        + ([_dcp_unsaved(g, pool, dtype, seed + 26)] if g.kind.dcp_rank else [])
        + [
            make_scenario(rng, batch_g, forwards, name, seed + 27 + index, **fields)
            for index, (name, batch_g, forwards, fields) in enumerate(
                cp_batches(rng, g, scaled_input) if cp_writes(g) else []
            )
        ]
    )


def _unsaved(pool: str, dtype: str, seed: int) -> list[Scenario]:
    """A layer whose forward is told not to save (save_kv_cache=False: a KV-sharing model's
    later layers attend over an earlier layer's cache): a prefill and decode steps on the small
    geometry, each calling only its last layer, unsaved. Its rows must keep the canary, so a
    backend that writes anyway (tests `save_kv_cache or k is not None`, or `not save_kv_cache`)
    is a finding. No saving call beside it: a mutant that skips a saving write goes on to its
    attention, which the driver cannot carry, and that ends the whole check as a skip. Its own
    generator, so the scenarios before it draw what they drew."""
    rng = random.Random(f"{seed}:{pool}:{dtype}:unsaved")
    g = _small_geometry(pool, dtype)
    unsaved = g.kv_layer_ids[-1:]
    tokens = allocate(rng, g.size, g.page_size, 12)
    steps = allocate(rng, g.size, g.page_size, 2)

    def forward(loc: list[int]) -> Forward:
        return Forward(loc, layers=unsaved, unsaved_layers=unsaved)

    return [
        make_scenario(rng, g, [forward(tokens)], "unsaved-layer", seed),
        make_scenario(
            rng, g, [forward([slot]) for slot in steps], "unsaved-layer-decode", seed + 1
        ),
    ]


def _dcp_unsaved(g: Geometry, pool: str, dtype: str, seed: int) -> Scenario:
    """The DCP rank of `_dcp_rank`, its prefill calling layer 6 told not to save (the DCP call
    sites' own forwards, flashinfer_mla's among them)."""
    rng = random.Random(f"{seed}:{pool}:{dtype}:dcp-unsaved")
    forward = _dcp_forward(rng, g, list(range(12)), layers=[6], unsaved_layers=[6])
    return make_scenario(rng, _dcp_ranked(g), [forward], "dcp-rank-unsaved", seed)


def _pipeline_rank(rng: random.Random, g: Geometry, seed: int) -> Scenario:
    """A pipeline-parallel rank past the first: the pool keeps layers 3 to 6 of the model, so a
    door that indexes a layer's buffer by its global id, or subtracts start_layer twice, writes
    another layer's rows or none; a prefill, then a decode step on two of its layers."""
    ranked = replace(g, start_layer=3)
    prefill, step = allocate(rng, g.size, g.page_size, 20), allocate(rng, g.size, g.page_size, 1)
    forwards = [Forward(prefill), Forward(step, layers=[4, 6])]
    return make_scenario(rng, ranked, forwards, "pipeline-rank", seed)


def _dcp_rank(rng: random.Random, g: Geometry, seed: int, scaled_input: str) -> list[Scenario]:
    """Rank 1 of a decode-context-parallel pair, on a pipeline rank (layers 3 to 6): a 20-token
    prefill whose odd positions are the rank's, each at global id 2 * row + position % 2; a
    decode step of two tokens on layers 4 and 6, one of them the rank's; and a batch that carries
    no positions, whose every token an MHA rank writes at id // 2 (an MLA rank: those of odd id).
    K and V are column slices of one tensor (strided rows) unscaled, and divided on the way to a
    cast scaled; heads 2 and V as wide as K (the masked kernel copies V with K's row shape)."""
    ranked = _dcp_ranked(g)
    forwards = [
        _dcp_forward(rng, g, list(range(20))),
        _dcp_forward(rng, g, [20, 33], layers=[4, 6]),
        replace(_dcp_forward(rng, g, [5, 8, 13]), positions=None),
    ]
    scaled = dict(
        input_dtype=scaled_input, k_scale=Scale("float", 0.5), v_scale=Scale("tensor", 2.0)
    )
    return [
        make_scenario(rng, ranked, forwards, "dcp-rank", seed, fused_qkv=True),
        make_scenario(
            rng, ranked, [replace(f) for f in forwards], "dcp-rank-scaled", seed + 1, **scaled
        ),
    ]


def _dcp_ranked(g: Geometry) -> Geometry:
    return replace(g, start_layer=3, dcp_size=2, dcp_rank=1, v_head_dim=None)


def _dcp_forward(rng: random.Random, g: Geometry, positions: list[int], **fields) -> Forward:
    """A DCP pair's forward: each token at global id 2 * row + position % 2."""
    rows = allocate(rng, g.size, g.page_size, len(positions))
    loc = [2 * row + position % 2 for row, position in zip(rows, positions)]
    return Forward(loc, positions=positions, **fields)


def _commits_drafts(g: Geometry) -> bool:
    """A kind whose cells commit a speculative draft: its record names the commit door."""
    return "set_kv_buffer_prefix_valid" in g.kind.doors


def _draft_commits(rng: random.Random, g: Geometry, seed: int, scaled_input: str) -> list[Scenario]:
    """A speculative draft's commit (the dspark model's write, an MHA pool): four requests' rows
    of six locs, of which 6, 3, 0 and 1 tokens are committed; unscaled, and scaled on the way to
    a cast (where dividing the caller's tensors or a copy of them shows)."""
    loc = allocate(rng, g.size, g.page_size, 24)
    commit = Forward(loc, commit_lens=[6, 3, 0, 1])
    scaled = dict(
        input_dtype=scaled_input, k_scale=Scale("float", 0.5), v_scale=Scale("tensor", 2.0)
    )
    return [
        make_scenario(rng, g, [commit], "prefix-valid", seed),
        make_scenario(rng, g, [replace(commit)], "prefix-valid-scaled", seed + 1, **scaled),
    ]


def _edges(rng: random.Random, g: Geometry, pool: str, dtype: str, seed: int) -> list[Scenario]:
    """What the profiles pin, in the default run too: the reach scenario (slot 1, 2^15, 2^16,
    2^17 and the last slot, within the ci profile's pool budget), values at and past the
    format's range (divided by 0.5, so past the maximum after scaling), and special values
    (+-inf, NaN, +-0, subnormals of the input and of an fp8 pool), a call passing a stale
    full_loc that every modelled pool ignores, padding rows of NaN written at slot 0 (the
    reserved slot a store may skip), and a batch whose loc is not marked physical (a unified
    pool refuses it)."""
    tokens = allocate(rng, g.size, g.page_size, 24)
    scaled = dict(k_scale=Scale("float", 0.5), v_scale=Scale("float", 0.5))
    return [
        replace(reach_scenario(pool, dtype, REACH_POOL_BYTES, seed), name="reach"),
        make_scenario(
            rng, g, [Forward(tokens)], "extreme-scaled", seed + 1, values="extreme", **scaled
        ),
        make_scenario(rng, g, [Forward(tokens)], "special-values", seed + 2, values="special"),
        make_scenario(
            rng, g, [Forward(tokens[:12])], "stale-full-loc", seed + 3, stale_full_loc=True
        ),
        make_scenario(
            rng, g, [Forward(tokens[:12] + [0] * 4)], "nan-padding", seed + 4, nan_padding=True
        ),
        make_scenario(rng, g, [Forward(tokens[:12])], "unmarked-loc", seed + 5, unmarked_loc=True),
    ]


def _small_geometry(pool: str, dtype: str) -> Geometry:
    g = replace(
        geometry(pool, dtype, size=64),
        layer_num=3 if pool in LINEAR_LAYER_KINDS + SPARSE_INDEX_KINDS else 2,
        swa_layer_ids=[1] if KINDS[pool].swa else [],
        linear_layer_ids=[1] if pool in LINEAR_LAYER_KINDS else [],
    )
    if g.kind.sparse_index:  # dense layer 0, index K/V on 1, index K only on 2
        g = replace(g, sparse_layer_ids=[1, 2], k_only_layer_ids=[2])
    return g


def _loc_lives(g: Geometry, seed: int) -> list[Scenario]:
    """Where a pool that memoises its full-to-SWA translation goes wrong (PR #25824 keyed the
    memo on the loc's storage and length, #25889 kept it across a remap), on the small SWA
    geometry: `micro-batches`, one batch's loc in one storage, written as three slices of it
    (6, 6 and 3 tokens: two of equal length at different offsets, one shorter); `remap-reuse`,
    the same six slots written three times through one view of one storage, their request freed
    and the page handed to a new request with other SWA slots between the writes, the mapping
    re-registered (register_mapping of a new tensor) before the second write and changed in
    place before the third."""
    batch = PoolLife(g)
    storage = batch.new_storage()
    loc = batch.grow(0, 15, [0], window=15)
    for start, end in ((0, 6), (6, 12), (12, 15)):
        batch.forward(loc[start:end], view=View(storage, start))
    reuse = PoolLife(g)
    storage = reuse.new_storage()
    reuse.forward(reuse.grow(0, 6, [0], window=6), view=View(storage))
    for rid, in_place in ((1, False), (2, True)):
        reuse.free(rid - 1)  # its pages go to the end of the free list: -1 picks them again
        slots = reuse.grow(rid, 6, [-1], window=6)
        reuse.forward(slots, view=View(storage), in_place=in_place)
    return [batch.scenario(seed, "micro-batches"), reuse.scenario(seed + 1, "remap-reuse")]


# small-scaled's 20 tokens as a server batches them: three requests, two with a cached prefix, of
# lengths a CP strategy cuts into uneven blocks (a CP rank's release splits request by request),
# and so that two ranks hold 11 and 9 of them: the shorter share is padded for the gather.
SMALL_REQUESTS = [RequestSpan(5, 5), RequestSpan(6, 15), RequestSpan(9, 12)]


def _small(
    rng: random.Random, pool: str, dtype: str, seed: int, scaled_input: str
) -> list[Scenario]:
    """Two layers (layer 1 is the SWA layer; a hybrid linear pool has a linear layer 1 between
    them, three in all) and 64 slots, cheap enough for ~14 backends x modes
    (the backends' focus, backends/focus.py FOCUS): scale kinds (tensor, parameter, none,
    float) on a differing input dtype, of three requests, narrowing, decode steps and
    cross-attention."""
    g = _small_geometry(pool, dtype)
    tokens = allocate(rng, g.size, g.page_size, 20)
    decode = allocate(rng, g.size, g.page_size, 3)
    scenarios = [
        make_scenario(
            rng,
            g,
            [Forward(tokens, requests=SMALL_REQUESTS)],
            "small-scaled",
            seed,
            input_dtype=scaled_input,
            k_scale=Scale("tensor", 0.3),
            v_scale=Scale("param", 1.7),
        ),
        make_scenario(
            rng,
            g,
            [Forward(tokens[:12])],
            "small-param-none",
            seed + 1,
            input_dtype=scaled_input,
            k_scale=Scale("param", 0.25),
            v_scale=Scale("none"),
        ),
        make_scenario(
            rng, g, [Forward(tokens[:9] + [0] * 7, narrow=9)], "small-narrowed", seed + 2
        ),
        make_scenario(
            rng,
            g,
            [Forward([slot]) for slot in decode],
            "small-decode",
            seed + 3,
            input_dtype=scaled_input,
            k_scale=Scale("float", 0.5),
            v_scale=Scale("float", 2.0),
        ),
    ]
    # Nor MLA, nor MiniMax, nor QSA models cross-attend.
    if (
        not g.kind.latent
        and not g.kind.sparse_index
        and not g.kind.qsa
        and not g.kind.nvfp4_page_rows
    ):
        # Layer 0 (a full-attention layer on SWA pools) writes at the encoder loc.
        slots = allocate(rng, g.size, g.page_size, 20)
        scenarios.append(
            make_scenario(
                rng,
                g,
                [Forward(slots[:10], encoder_loc=slots[10:], cross_layers=[0])],
                "small-cross",
                seed + 4,
                k_scale=Scale("float", 1.0),
                v_scale=Scale("float", 1.0),
            )
        )
    return scenarios
