"""What a backend's write site has at hand: the batch, the layer, its metadata and the tensors.

These mirror the SGLang objects the call sites read (ForwardBatch, RadixAttention, the
backend's forward metadata), with only the attributes those call sites touch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

# The ranks of kvh run's context-parallel group (harness/sut/worker/cp_group.py), which the cp
# call-site model simulates in one process: the smallest that all-gathers across processes.
CP_RANKS = 2


@dataclass
class ForwardBatch:
    out_cache_loc: torch.Tensor
    encoder_out_cache_loc: Optional[torch.Tensor] = None
    # Whether the batch's locs are marked physical: the harness's own record of it, which its
    # builtin pools read; a release's batch is marked by its own plan (backends/release_batch.py).
    physical: bool = True
    token_to_kv_pool: Any = None
    # Context-parallel group size of the single-process CP helper (ranks simulated in one process):
    # that of kvh run's CP group, where the release's own CP code writes the same cells.
    attn_cp_size: int = CP_RANKS
    # The loc before narrowing: what init_forward_metadata translates to SWA slots (the model's
    # Metadata.swa_out_cache_loc); backends/real_code.py hands it to a release's own backend.
    padded_out_cache_loc: Optional[torch.Tensor] = None
    # Each token's position in its request (Forward.positions), where the scenario gives them.
    positions: Optional[torch.Tensor] = None
    # The requests whose new tokens out_cache_loc holds (scenarios.model.RequestSpan, each its
    # tokens written now and its length after them), where they are exactly the written rows
    # (Forward.written_requests): a CP rank's release cuts the batch by them.
    requests: Optional[list[Any]] = None
    # Whether a server's batch would carry those requests' extend lengths on the host, or only
    # their seq_lens (Forward.extend_lens_on_host).
    extend_lens_on_host: bool = True


@dataclass
class Layer:
    layer_id: int
    is_cross_attention: bool = False
    k_scale: Any = None
    v_scale: Any = None
    k_scale_float: Optional[float] = None
    v_scale_float: Optional[float] = None
    sliding_window_size: int = -1  # > 0 on sliding-window layers, as RadixAttention has it
    v_head_dim: int = 0  # MLA: kv_lora_rank (xpu derives k_rope from k[..., v_head_dim:])
    # A MiniMax sparse layer's index-branch scales (the model hands the layer's k/v scales on).
    idx_k_scale_float: Optional[float] = None
    idx_v_scale_float: Optional[float] = None


@dataclass
class Metadata:
    # Translated once per forward from the padded out_cache_loc, as the backends do.
    swa_out_cache_loc: Optional[torch.Tensor] = None
    encoder_swa_out_cache_loc: Optional[torch.Tensor] = None
    # flashinfer 0.5.23 `_kv_write_scales`: a global-scale (FP4) quant method makes it pass
    # (None, None).
    kv_quant_needs_global_scale: bool = False
    # What the canonical call passes as KVWriteLoc.full_loc (Scenario.stale_full_loc), or None.
    full_loc: Optional[torch.Tensor] = None
    # A speculative draft's commit lengths, one per request row of out_cache_loc (dspark's
    # write_commit_lens); None where the forward commits every token.
    commit_lens: Optional[torch.Tensor] = None
    # A QSA layer's indexer plan (qsa/metadata.py): each token's pending-ring row and RoPE
    # position, and of the tokens that end a group their rows in the batch and compressed rows.
    qsa_ring_slots: Optional[torch.Tensor] = None
    qsa_positions: Optional[torch.Tensor] = None
    qsa_group_rows: Optional[torch.Tensor] = None
    qsa_write_locs: Optional[torch.Tensor] = None


@dataclass
class WriteRequest:
    api: Any  # the SUT module: KVWriteLoc and friends, when its era has them
    pool: Any
    forward_batch: ForwardBatch
    layer: Layer
    metadata: Metadata
    k: torch.Tensor  # MHA: (n, heads, head_dim); MLA: nope (n, 1, kv_lora_rank)
    v: torch.Tensor  # MHA: (n, heads, v_head_dim); MLA: unused by the pool
    k_rope: Optional[torch.Tensor] = None  # MLA only: (n, 1, qk_rope_head_dim) or None
    # A MiniMax sparse layer's index k and v: (n, 1, index_head_dim); idx_v None where the layer
    # keeps no index V (Geometry.index_parts).
    idx_k: Optional[torch.Tensor] = None
    idx_v: Optional[torch.Tensor] = None
    # A QSA full layer's indexer keys, (n, QSA_INDEX_HEADS, QSA_INDEX_HEAD_DIM): each token's key
    # for the pending ring, and a compressed key per token of which the call passes the rows of
    # the tokens that end a group (Metadata.qsa_group_rows).
    qsa_state: Optional[torch.Tensor] = None
    qsa_ck: Optional[torch.Tensor] = None
    # A DSA layer's indexer key as act_quant hands it: (n, 128) fp8 e4m3 and (n, 1) fp32 scales.
    index_k: Optional[torch.Tensor] = None
    index_k_scale: Optional[torch.Tensor] = None
    is_mla: bool = False
    pool_kind: str = ""  # the pool's kind (pools/kinds/), by name
    # The decode-context-parallel group the backend serves in (get_parallel().attn_dcp_size and
    # attn_dcp_rank in 0.5.23): a DCP rank's pool (Geometry.dcp_size, dcp_rank).
    dcp_size: int = 1
    dcp_rank: int = 0
    use_sliding_window_kv_pool: bool = False
    save_kv_cache: bool = True
    extras: dict = field(default_factory=dict)

    @property
    def mla_k(self) -> torch.Tensor:
        """The combined MLA row (nope ++ rope) that the set_kv_buffer door takes."""
        if self.k_rope is None or self.k_rope.shape[-1] == 0:
            return self.k
        return torch.cat([self.k, self.k_rope], dim=-1)

    def cache_loc(self) -> torch.Tensor:
        if self.layer.is_cross_attention:
            return self.forward_batch.encoder_out_cache_loc
        return self.forward_batch.out_cache_loc

    def swa_loc(self) -> Optional[torch.Tensor]:
        if self.layer.is_cross_attention:
            return self.metadata.encoder_swa_out_cache_loc
        return self.metadata.swa_out_cache_loc
