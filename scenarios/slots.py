"""Where each token of a scenario lands: the rows a correct write touches, derived from the
scenario alone (the expectations, the coverage table and the staging of locs read them). A pool
kind that translates a token id (HiSparse, page-interleave) or keeps an indexer cache in another
row space (QSA, DSA) says here how.
"""

from __future__ import annotations

from typing import Optional

import torch

from pools.builtin.layouts.unified import entry_bytes
from pools.dtypes import dtype_spec
from scenarios.model import (
    DRAFT_HOST_LAYERS,
    DRAFT_RUNNERS,
    LAYER_SHARD_RANK,
    LAYER_SHARD_SIZE,
    PAGE_SHARD_RANK,
    PAGE_SHARD_SIZE,
    QSA_COMPRESS_RATIO,
    QSA_PARTS,
    Forward,
    Geometry,
    Scenario,
)

# The indexer parts whose rows are not write_slots' (Geometry.qsa_parts, dsa_index_parts).
INDEXER_PARTS = QSA_PARTS + ("qsa_rope", "index_k")


def hisparse_device_slots(g: Geometry, slots: torch.Tensor) -> torch.Tensor:
    """The device slots of logical token ids in a HiSparse pool's mapping: each page one page up,
    the last page to page 1 (page 0, the padding sink, stays), offsets kept. A pool that writes
    the logical id, or translates twice, writes a page off; the reach scenario's high ids stay
    high, and its last page lands on slot 1."""
    page, pages = g.page_size, g.size // g.page_size
    number, offset = slots // page, slots % page
    return torch.where(number == 0, slots, (number % pages + 1) * page + offset)


def hisparse_mapping_tensor(g: Geometry, device: str) -> torch.Tensor:
    """full_to_hisparse_device_index_mapping over every logical id the pool's loc can hold."""
    ids = torch.arange(g.size + g.page_size, dtype=torch.int64)
    return hisparse_device_slots(g, ids).to(device)


def page_interleave_row(g: Geometry, slot: int) -> Optional[int]:
    """The local row of logical token id `slot` on the page-interleave pool's rank, None where
    another rank owns its page: logical pages are dealt round-robin over PAGE_SHARD_SIZE ranks,
    and a rank's k-th owned page is its local page k, offsets kept."""
    page = g.page_size
    logical_page, offset = divmod(slot, page)
    if logical_page % PAGE_SHARD_SIZE != PAGE_SHARD_RANK:
        return None
    return logical_page // PAGE_SHARD_SIZE * page + offset


def page_interleave_id(g: Geometry, row: int) -> int:
    """The logical token id whose local row on the page-interleave pool's rank is `row` (the
    inverse of page_interleave_row)."""
    local_page, offset = divmod(row, g.page_size)
    return (local_page * PAGE_SHARD_SIZE + PAGE_SHARD_RANK) * g.page_size + offset


def unified_entry_bytes(g: Geometry, layers: int) -> int:
    """One slot's entry in a unified MHA sub-pool of `layers` layers: [K_0 | V_0 | K_1 | ...],
    rounded up to SGLang's ENTRY_ALIGN_BYTES. A fused draft's sub-pool holds the target's
    DRAFT_HOST_LAYERS rows, then every runner's lanes (rows of the same width here)."""
    item = dtype_spec(g.dtype).store_dtype.itemsize
    if g.kind.unified_draft:
        layers = DRAFT_HOST_LAYERS + DRAFT_RUNNERS * layers
    return entry_bytes(layers, g.head_num * (g.head_dim + (g.v_head_dim or g.head_dim)) * item)


def unified_swa_base(g: Geometry) -> int:
    """How far up a UnifiedSWAKVPool's SWA slots sit: SWA slot id j (past page 0) is physical
    slot j + base, a whole number of pages, the first above every byte of the full sub-pool's
    size + page_size slots. Both sub-pools' views start at byte 0 of one buffer, so this is what
    SGLang's two-ended allocator guarantees: their slots never share a byte."""
    full = unified_entry_bytes(g, len(g.full_layer_ids)) * (g.size + g.page_size)
    swa = unified_entry_bytes(g, len(g.swa_layer_ids))
    pages = -(-full // (swa * g.page_size))
    return pages * g.page_size


def unified_swa_slot(g: Geometry, swa_slots: torch.Tensor) -> torch.Tensor:
    """The physical SWA slot of SWA slot ids (the full_to_swa mapping's values): page 0, the
    padding sink both sub-pools share, stays; every other id moves up by unified_swa_base."""
    return torch.where(swa_slots < g.page_size, swa_slots, swa_slots + unified_swa_base(g))


def unified_swa_rows(g: Geometry, layer_id: int) -> tuple[int, int]:
    """The rows of a UnifiedSWAKVPool layer's view that are its sub-pool's (start, stop): a SWA
    layer's size_swa + page_size slots from the base, so row j is SWA slot id j; a full layer's
    from 0 up to the last full entry wholly below the SWA slots, so no byte between the two
    sub-pools goes unwatched."""
    base = unified_swa_base(g)
    if layer_id in g.swa_layer_ids:
        return base, base + g.rows(layer_id)
    swa_entry = unified_entry_bytes(g, len(g.swa_layer_ids))
    return 0, base * swa_entry // unified_entry_bytes(g, len(g.full_layer_ids))


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
    the loc's dtype)."""
    slots = forward.loc[: forward.tokens]
    ends = [token for token, slot in enumerate(slots) if qsa_compressed_slot(slot) is not None]

    def tensor(values: list[int], dtype: torch.dtype = torch.int64) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype, device=device)

    return dict(
        qsa_ring_slots=tensor([qsa_ring_slot(token, slot) for token, slot in enumerate(slots)]),
        qsa_positions=tensor(slots),
        qsa_group_rows=tensor(ends),
        qsa_write_locs=tensor([qsa_compressed_slot(slots[token]) for token in ends], loc_dtype),
    )


def owned_layers(g: Geometry) -> range:
    """The layers a layer-split pool's rank keeps (get_layer_shard_range): a contiguous share,
    the first `layers % size` ranks one layer more; every layer on other pool kinds."""
    if not g.kind.layer_split:
        return range(g.layer_num)
    base, rest = divmod(g.layer_num, LAYER_SHARD_SIZE)
    start = LAYER_SHARD_RANK * base + min(LAYER_SHARD_RANK, rest)
    return range(start, start + base + (1 if LAYER_SHARD_RANK < rest else 0))


def write_slots(scenario: Scenario, forward: Forward, layer_id: int) -> list[Optional[int]]:
    """The slots a correct pool writes for this (forward, layer), in token order; None for a
    token the call does not write (a draft token past its row's commit length, a token of a page
    another page-interleave rank owns, any token of a layer another layer-split rank keeps)."""
    g = scenario.geometry
    source = forward.encoder_loc if layer_id in forward.cross_layers else forward.loc
    slots = source[: forward.tokens]
    if layer_id not in owned_layers(g):
        return [None] * len(slots)
    if g.kind.swa and layer_id in g.swa_layer_ids:
        index = next(i for i, f in enumerate(scenario.forwards) if f is forward)
        mapping = scenario.mapping_at(index)
        return [mapping[slot] for slot in slots]
    if g.kind.hisparse:
        return hisparse_device_slots(g, torch.tensor(slots, dtype=torch.int64)).tolist()
    if g.kind.page_interleave:
        return [page_interleave_row(g, slot) for slot in slots]
    if forward.commit_lens is not None:  # only each row's committed prefix
        width = len(forward.loc) // len(forward.commit_lens)
        lens = forward.commit_lens
        return [slot if i % width < lens[i // width] else None for i, slot in enumerate(slots)]
    return list(slots)


def indexer_slots(g: Geometry, forward: Forward, layer_id: int, part: str) -> list[Optional[int]]:
    """The rows a correct write of indexer part `part` (INDEXER_PARTS) touches, in token order:
    the pending ring's and the compressed keys' on a QSA layer, the logical ids a DSA layer's
    indexer keys take (a HiSparse DSA pool keeps them by logical id; a page-interleave one only
    its rank's, at their local rows, as its K/V)."""
    slots = forward.loc[: forward.tokens]
    if part == "index_k" and layer_id not in owned_layers(g):
        return [None] * len(slots)
    if part == "index_k" and g.kind.page_interleave:
        return [page_interleave_row(g, slot) for slot in slots]
    if part == "index_k":
        return list(slots)
    if part == "qsa_ck":
        return [qsa_compressed_slot(slot) for slot in slots]
    return [qsa_ring_slot(token, slot) for token, slot in enumerate(slots)]
