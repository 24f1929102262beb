"""The scenario: a JSON-serialisable description of pools and writes, the unit of repro.

Tensors are never stored; scenarios.materialize regenerates them bit-for-bit from `seed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from pools.kinds import landing, layer_parts
from pools.kinds.registry import KINDS, kinds_where
from pools.kinds.spec import PoolKind

BASE_POOL_KINDS = kinds_where(lambda kind: kind.base)
# Kinds whose storage is not token-major rows or not plain dtype casts
# (pools/builtin/layouts/kinds.py).
LAYOUT_POOL_KINDS = kinds_where(lambda kind: kind.family == "layout")
# HybridLinearKVPool over MHA or MLA: linear-attention layers keep no KV in it, full-attention
# layers write one dense pool (pools/builtin/hybrid_linear_storage.py).
HYBRID_LINEAR_KINDS = kinds_where(lambda kind: kind.linear_layers and not kind.qsa)
# MiniMaxSparseKVPool: every layer's K/V in one main MHA pool; sparse layers also keep an index
# K (and, unless value-disabled, an index V) in index sub-pools of one head
# (pools/judge/minimax_sparse.py).
SPARSE_INDEX_KINDS = kinds_where(lambda kind: kind.sparse_index)
# HiSparse device pools: every write lands at full_to_hisparse_device_index_mapping[loc], the
# device slot of a logical token id (pools.kinds.landing.hisparse_device_slots).
HISPARSE_KINDS = kinds_where(lambda kind: kind.hisparse and not kind.dsv4)
# Page-interleave pools: pages striped across a shard group; each rank keeps only the tokens of
# the logical pages it owns, at its local rows (pools.kinds.landing.page_interleave_row).
PAGE_INTERLEAVE_KINDS = kinds_where(lambda kind: kind.page_interleave)
# QSATokenToKVPool (Qwen4-Exp's compressed sparse attention): a hybrid linear MHA pool whose
# full-attention layers also keep the QSA indexer's pending key ring, the ring's RoPE positions
# (one buffer for all layers) and the compressed keys (pools/judge/qsa.py).
QSA_KINDS = kinds_where(lambda kind: kind.qsa)
# DeepSeekV4IndexerPool: a DeepSeek V4 compress ratio's indexer keys alone (no K/V: its K/V
# doors raise), in the DSA index-key layout; its caller hands it the compress layer's local id.
DSV4_INDEXER_KINDS = kinds_where(lambda kind: not kind.keeps_kv)
# The model's logical page in the indexer's pages (global_page_size / page_size): a ratio-4
# indexer's 64-token page compresses 256 tokens. Its cache reserves one logical page, so it holds
# ceil((size + 4 * page_size) / page_size) pages: 3 more than the ids a loc may hold.
DSV4_LOGICAL_PAGES = 4
# SWAKVPool over a DSATokenToKVPool full side and an MLATokenToKVPool SWA side (0.5.21 on, the
# dots.note hybrid): only its full layers keep indexer keys.
SWA_DSA_KINDS = kinds_where(lambda kind: kind.swa and kind.dsa_mla)
# The DSA pools whose K/V an MLA pool keeps beside the indexer keys (DSATokenToKVPool's).
DSA_MLA_KINDS = kinds_where(lambda kind: kind.dsa_mla)
# The pools whose indexer keys the harness writes (set_index_k_scale_buffer, the SetKAndS store):
# pages of DSA_INDEX_PAGE tokens, each page its keys' bytes then their scales' bytes.
DSA_INDEX_KINDS = kinds_where(lambda kind: kind.dsa_index)
# LayerSplitDSATokenToKVPool: each rank of an attention context-parallel group keeps a contiguous
# share of the layers; the harness builds rank LAYER_SHARD_RANK of LAYER_SHARD_SIZE, so the
# last layers are its peer's (pools.kinds.landing.owned_layers).
LAYER_SPLIT_KINDS = kinds_where(lambda kind: kind.layer_split)
# UnifiedSWAKVPool: full and SWA sub-pools of unified MHA entries in one byte buffer, each
# sub-pool's views starting at byte 0; the full sub-pool's slots are the buffer's bottom, the SWA
# sub-pool's its top (pools.kinds.landing.unified_swa_slot). A SWA kind: it takes swa_loc.
# UnifiedDraftSWAKVPool is a draft model's SWA pool over such a buffer: its layers are lanes
# fused into each entry after the target's own rows, and its full layers write at loc.
UNIFIED_SWA_KINDS = kinds_where(lambda kind: kind.unified_swa)
UNIFIED_DRAFT_KINDS = kinds_where(lambda kind: kind.unified_draft)
# DeepSeek V4's main-KV pools (mem_cache/deepseek_v4_memory_pool.py): one K-only latent row a
# token (448 NoPE + 64 RoPE dims, an MLA geometry of fixed widths) on 64-token pages. `dsv4`:
# DeepSeekV4SingleKVPool's V4 layout (fp8 NoPE, bf16 RoPE, UE8M0 scales; pools/judge/dsv4.py);
# `dsv4_uniform_fp8`: DeepSeekV4UniformFP8KVPool, 512 e4m3 bytes a token; `dsv4_hisparse_c4`:
# HiSparseC4DevicePool, the V4 store at the device slot of a HiSparse mapping (as HISPARSE_KINDS).
DSV4_HISPARSE_KINDS = kinds_where(lambda kind: kind.dsv4 and kind.hisparse)
DSV4_KINDS = kinds_where(lambda kind: kind.dsv4)
# MiniMaxM3Nvfp4KVPool (MiniMax M3.1): every layer sparse, its main K/V and its one-head index K
# packed as NVFP4 in page rows: one (layer, page) row of [K, K scale, V, V scale] bytes in the
# main pool, of [index K, index K scale] in the index pool (pools/judge/minimax_m3_nvfp4.py).
# Its quantising doors need SM90+; its cells write already-quantised rows, as a retracted
# request's restore does (backends/retraction_restore.py).
NVFP4_PAGE_ROW_KINDS = kinds_where(lambda kind: kind.nvfp4_page_rows)
# The kinds with linear-attention layers (no KV cache, no write).
LINEAR_LAYER_KINDS = kinds_where(lambda kind: kind.linear_layers)
# The kinds whose full layers write at a given full_loc by design (a pre-translated physical loc),
# not at loc: the skip full-loc-by-design. A fused draft's pool writes at loc, full_loc or not.
FULL_LOC_KINDS = kinds_where(lambda kind: kind.full_loc_by_design)
POOL_KINDS = tuple(KINDS)
# The MLA kinds, and the DeepSeek V4 indexer's, whose caller draws a latent row it never writes.
MLA_POOL_KINDS = kinds_where(lambda kind: kind.latent)
SCALE_KINDS = ("none", "float", "tensor", "param")
# How k/v values are drawn: normal draws, values near the pool dtype's range limit, or normal
# draws sprinkled with ±0, subnormals, ±inf and NaN (opt-in: some pools legitimately differ on NaN).
VALUE_KINDS = ("normal", "extreme", "special")


@dataclass
class Geometry:
    pool: str  # one of POOL_KINDS
    dtype: str  # a pools.dtypes name
    size: int  # allocatable slots of the (full) pool
    page_size: int
    layer_num: int
    head_num: int = 0
    head_dim: int = 0
    v_head_dim: Optional[int] = None
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    swa_layer_ids: list[int] = field(default_factory=list)
    size_swa: int = 0
    # A hybrid linear pool's linear-attention layers: no KV cache, no write, no buffer.
    linear_layer_ids: list[int] = field(default_factory=list)
    # A MiniMax sparse pool's sparse layers (the others are dense), those of them whose index
    # branch keeps no V (SGLang's disable_value_sparse_layer_ids), and the index head's width.
    sparse_layer_ids: list[int] = field(default_factory=list)
    k_only_layer_ids: list[int] = field(default_factory=list)
    index_head_dim: int = 0
    # The model's first layer this pool keeps: a pipeline-parallel rank past the first keeps
    # layers start_layer .. start_layer + layer_num - 1, each written by its global id
    # (PoolKind.pipeline_rank kinds only).
    start_layer: int = 0
    # A decode-context-parallel rank's pool (PoolKind.dcp_rank kinds only): of dcp_size ranks,
    # this is rank dcp_rank. The loc holds global token ids; the rank keeps a token whose
    # position is its own (position % dcp_size == dcp_rank; an MLA rank: whose id is,
    # id % dcp_size == dcp_rank) at row id // dcp_size.
    dcp_size: int = 1
    dcp_rank: int = 0

    @property
    def kind(self) -> PoolKind:
        """The pool kind's record (pools/kinds/): what the kind is, stated once."""
        return KINDS[self.pool]

    # Which parts a layer keeps and writes beside its K/V: the kind's answer (pools/kinds/).
    def index_draws(self, layer_id: int) -> tuple[tuple[str, ...], tuple[int, int, int]]:
        return layer_parts.index_draws(self, layer_id)

    def dsa_index_parts(self, layer_id: int) -> tuple[str, ...]:
        return layer_parts.dsa_index_parts(self, layer_id)

    def qsa_parts(self, layer_id: int) -> tuple[str, ...]:
        return layer_parts.qsa_parts(self, layer_id)

    def index_parts(self, layer_id: int) -> tuple[str, ...]:
        return layer_parts.sparse_index_parts(self, layer_id)

    @property
    def kv_layer_ids(self) -> list[int]:
        """The layers that keep K/V in the pool: all but the linear-attention ones."""
        return [layer for layer in self.layer_ids if layer not in self.linear_layer_ids]

    @property
    def layer_ids(self) -> range:
        """The model's layers the pool keeps, by their global ids."""
        return range(self.start_layer, self.start_layer + self.layer_num)

    @property
    def full_layer_ids(self) -> list[int]:
        return [layer for layer in self.kv_layer_ids if layer not in self.swa_layer_ids]

    @property
    def loc_slots(self) -> int:
        """How many token ids a loc may hold (the kind's answer: pools/kinds/landing.py)."""
        return landing.loc_slots(self)

    def rows(self, layer_id: int) -> int:
        """Buffer height of the sub-pool that holds `layer_id` (0: a linear layer has none)."""
        if layer_id in self.linear_layer_ids:
            return 0
        size = self.size_swa if layer_id in self.swa_layer_ids else self.size
        return size + self.page_size


@dataclass
class Scale:
    kind: str = "none"  # one of SCALE_KINDS
    value: float = 1.0


def divides_inputs(pool: str, k_scale: Scale, v_scale: Scale) -> bool:
    """Whether a write divides the caller's k/v in place: a scale is given, or the pool is a
    hybrid linear one, whose set_kv_buffer's scales default to 1.0. torch rounds a NaN quotient
    to bf16 as 0xFFFF in its vectorised loop and 0x7FC0 in its scalar tail, so no judge can
    predict a NaN such a write leaves (the scenarios draw none there)."""
    return k_scale.kind != "none" or v_scale.kind != "none" or pool in LINEAR_LAYER_KINDS


@dataclass
class Remap:
    """A change of full_to_swa_index_mapping before a forward, as the SWA allocator makes it."""

    updates: list[list[int]]  # [full_slot, new_swa_slot] pairs applied to the mapping in effect
    in_place: bool = True  # True: the registered tensor is mutated; False: register_mapping(new)


@dataclass
class RequestSpan:
    extend: int  # tokens written by this forward
    length: int  # tokens with a slot once it ran: a cached prefix plus every token so far

    @property
    def prefix(self) -> int:
        return self.length - self.extend


@dataclass
class Forward:
    loc: list[int]  # the padded out_cache_loc; padding tokens point at slot 0
    narrow: Optional[int] = None  # write only loc[:narrow]; swa_loc still comes from the padded loc
    layers: Optional[list[int]] = None  # None: every layer
    encoder_loc: Optional[list[int]] = None  # cross-attention layers write here
    cross_layers: list[int] = field(default_factory=list)
    # loc as a view into a persistent storage tensor (a CUDA-graph static buffer, or one batch
    # split into micro-batches): forwards naming the same storage share one tensor for the whole
    # run, and each copies its loc in at `loc_offset` first. None: a fresh tensor of its own.
    loc_storage: Optional[int] = None
    loc_offset: int = 0
    remap: Optional[Remap] = None  # applied before this forward's writes
    # A speculative draft's commit (models/dspark.py): loc is len(commit_lens) requests' rows of
    # equal width, and only each row's first commit_lens[r] tokens are written
    # (MHATokenToKVPool.set_kv_buffer_prefix_valid). None: every token is written.
    commit_lens: Optional[list[int]] = None
    # Each token's position in its request, as ForwardBatch.positions carries it: on a DCP rank
    # (Geometry.dcp_size > 1) which tokens the rank keeps. None: the batch carries none, and a
    # DCP rank's write masks nothing.
    positions: Optional[list[int]] = None
    # The requests whose new tokens loc holds, in loc's order, as a server's ForwardBatch carries
    # them (extend_seq_lens_cpu, seq_lens_cpu): each request's tokens written now and its length
    # after them. None where the scenario names none (a regression, most builtin scenarios).
    requests: Optional[list[RequestSpan]] = None
    # Whether the batch carries the requests' extend lengths on the host (extend_seq_lens_cpu),
    # as a CUDA server's does. False: seq_lens_cpu alone, the extend lengths left on the device
    # (0.5.23's overlap scheduler on ROCm, scheduler.py gpu_only_lens), which a batch padded past
    # its requests also keeps: its requests are handed padded, and a CP strategy grows the last
    # one by the padding. Such requests have no cached prefix (serialize checks it).
    extend_lens_on_host: bool = True
    # Layers whose forward runs with save_kv_cache=False (a layer that reads another layer's
    # KV, as a KV-sharing model's later layers do): called, and must write nothing.
    unsaved_layers: list[int] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return len(self.loc) if self.narrow is None else self.narrow

    def written_requests(self) -> Optional[list[RequestSpan]]:
        """The requests, where they are exactly the rows the forward writes, or those rows less
        a padding where the batch keeps its extend lengths on the device (`extend_lens_on_host`):
        none where padding or a narrowing makes the written rows differ from the requests' new
        tokens otherwise (a batch no server's ForwardBatch would pair with those lengths)."""
        if self.requests is None:
            return None
        written = sum(r.extend for r in self.requests)
        padded = not self.extend_lens_on_host and self.narrow is None and written < self.tokens
        return self.requests if written == self.tokens or padded else None


@dataclass
class Scenario:
    geometry: Geometry
    forwards: list[Forward]
    seed: int = 0
    input_dtype: Optional[str] = None  # None: the pool dtype (fp8 pools get bf16)
    k_scale: Scale = field(default_factory=Scale)
    v_scale: Scale = field(default_factory=Scale)
    loc_dtype: str = "int64"
    mapping: Optional[list[int]] = None  # full_to_swa_index_mapping without the trailing -1
    stray_swa_loc: bool = False  # non-SWA pools get a junk swa_loc they must ignore
    # The canonical call passes a full_loc it did not refresh (a capture-stable buffer left by an
    # earlier replay, the class of #24743 and #37926): every entry the decoy slot. 0.5.23's MHA,
    # MLA and SWA pools unwrap `loc, swa_loc, _` and ignore it; a pool that reads it writes there.
    stale_full_loc: bool = False
    # Padding tokens (a loc entry of slot 0, within the written tokens) carry NaN in every k/v
    # (nope/rope) element, as a CUDA-graph padding row may (#32477): a store whose policy skips
    # the reserved slot must leave slot 0 as it was, so NaN never reaches attention.
    nan_padding: bool = False
    # The batch's out_cache_loc is not marked physical (a batch the release's own plan never
    # bound: virtual ids no plan translated, the class of #35245 and #27459). KVWriteLoc.for_batch
    # and for_layer carry the mark; a unified pool refuses the write, every other pool ignores it.
    unmarked_loc: bool = False
    name: str = ""
    values: str = "normal"  # one of VALUE_KINDS
    fused_qkv: bool = False  # k/v (MLA: nope/rope) are column slices of one tensor

    def mapping_at(self, forward_index: int) -> Optional[list[int]]:
        """The mapping in effect during a forward: the initial one with every remap up to it."""
        if self.mapping is None:
            return None
        mapping = list(self.mapping)
        for forward in self.forwards[: forward_index + 1]:
            for full_slot, swa_slot in forward.remap.updates if forward.remap else ():
                mapping[full_slot] = swa_slot
        return mapping

    def called_layers(self, forward: Forward) -> list[int]:
        """The layers whose attention the forward calls, saving or not."""
        return self.geometry.kv_layer_ids if forward.layers is None else forward.layers

    def layers_of(self, forward: Forward) -> list[int]:
        """The layers the forward writes: those it calls with save_kv_cache=True."""
        called = self.called_layers(forward)
        if not forward.unsaved_layers:
            return called
        return [layer for layer in called if layer not in forward.unsaved_layers]

    @property
    def narrowed(self) -> bool:
        return any(f.narrow is not None and f.narrow < len(f.loc) for f in self.forwards)
