"""Where each token of a scenario lands: the rows a correct write touches, derived from the
scenario alone (the expectations, the coverage table and the staging of locs read them). Where a
kind translates a token id (HiSparse, page-interleave, a SWA layer's mapping) is the kind's
answer (pools/kinds/landing.py); a QSA layer's indexer rows are here.
"""

from __future__ import annotations

from typing import Optional

import torch

from pools.kinds.fixed_geometry import QSA_COMPRESS_RATIO, QSA_PARTS
from pools.kinds.landing import hisparse_device_slots, index_key_rows, landing_rows
from scenarios.model import Forward, Geometry, Scenario

# The indexer parts whose rows are not write_slots' (Geometry.qsa_parts, dsa_index_parts).
INDEXER_PARTS = QSA_PARTS + ("qsa_rope", "index_k")


def hisparse_mapping_tensor(g: Geometry, device: str) -> torch.Tensor:
    """full_to_hisparse_device_index_mapping over every logical id the pool's loc can hold."""
    ids = torch.arange(g.size + g.page_size, dtype=torch.int64)
    return hisparse_device_slots(g, ids).to(device)


def qsa_ring_slot(token: int, slot: int) -> int:
    """The pending-ring row of a forward's `token`-th token at full slot `slot`, as a decode
    batch's (each token its own request, req_pool_idx = token + 1; its position is its slot):
    req_pool_idx * ratio + position % ratio. A padding token (slot 0) is request 0's, the ring's
    inert dump."""
    return 0 if slot == 0 else (token + 1) * QSA_COMPRESS_RATIO + slot % QSA_COMPRESS_RATIO


def qsa_compressed_slot(slot: int) -> Optional[int]:
    """The compressed-key row a token at full slot `slot` writes: full_slot // ratio where it
    ends a group of `ratio` positions, else None (it completes no group)."""
    if slot == 0 or slot % QSA_COMPRESS_RATIO != QSA_COMPRESS_RATIO - 1:
        return None
    return slot // QSA_COMPRESS_RATIO


def qsa_request_slots(scenario: Scenario) -> int:
    """Request slots for the pending ring: one per token of the largest forward, and slot 0."""
    return 1 + max(forward.tokens for forward in scenario.forwards)


def qsa_plan(forward: Forward, loc_dtype: torch.dtype, device: str) -> dict[str, torch.Tensor]:
    """A QSA forward's indexer plan (every full layer's): ring rows and positions (int64, as
    build_pending_ring_slots gives them), and the group ends' batch rows and compressed rows (in
    the loc's dtype). In whole tensors, the same rules as qsa_ring_slot and qsa_compressed_slot,
    which the expectations read token by token."""
    slots = torch.tensor(forward.loc[: forward.tokens], dtype=torch.int64)
    tokens = torch.arange(slots.numel(), dtype=torch.int64)
    padding = slots == 0
    ring = torch.where(padding, 0, (tokens + 1) * QSA_COMPRESS_RATIO + slots % QSA_COMPRESS_RATIO)
    ends = (~padding & (slots % QSA_COMPRESS_RATIO == QSA_COMPRESS_RATIO - 1)).nonzero().flatten()
    return dict(
        qsa_ring_slots=ring.to(device),
        qsa_positions=slots.to(device),
        qsa_group_rows=ends.to(device),
        qsa_write_locs=(slots[ends] // QSA_COMPRESS_RATIO).to(loc_dtype).to(device),
    )


def write_slots(scenario: Scenario, forward: Forward, layer_id: int) -> list[Optional[int]]:
    """The slots a correct pool writes for this (forward, layer), in token order; None for a
    token the call does not write (a draft token past its row's commit length, a token of a page
    another page-interleave rank owns, any token of a layer another layer-split rank keeps, a
    token at another DCP rank's position)."""
    source = forward.encoder_loc if layer_id in forward.cross_layers else forward.loc
    slots = source[: forward.tokens]
    mapping = None  # the full-to-SWA mapping in effect, which only a SWA layer's ids go through
    if layer_id in scenario.geometry.swa_layer_ids:
        index = next(i for i, f in enumerate(scenario.forwards) if f is forward)
        mapping = scenario.mapping_at(index)
    positions = None if forward.positions is None else forward.positions[: forward.tokens]
    rows = landing_rows(scenario.geometry, layer_id, slots, mapping, positions)
    if forward.commit_lens is not None:  # only each row's committed prefix
        width = len(forward.loc) // len(forward.commit_lens)
        lens = forward.commit_lens
        return [row if i % width < lens[i // width] else None for i, row in enumerate(rows)]
    return rows


def indexer_slots(g: Geometry, forward: Forward, layer_id: int, part: str) -> list[Optional[int]]:
    """The rows a correct write of indexer part `part` (INDEXER_PARTS) touches, in token order:
    the pending ring's and the compressed keys' on a QSA layer, the logical ids a DSA layer's
    indexer keys take (a HiSparse DSA pool keeps them by logical id; a page-interleave one only
    its rank's, at their local rows, as its K/V)."""
    slots = forward.loc[: forward.tokens]
    if part == "index_k":
        return index_key_rows(g, layer_id, slots)
    if part == "qsa_ck":
        return [qsa_compressed_slot(slot) for slot in slots]
    return [qsa_ring_slot(token, slot) for token, slot in enumerate(slots)]
