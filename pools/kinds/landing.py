"""Where a token of a kind lands, for a geometry and a layer: the row a logical token id takes
(a HiSparse pool's device slot, a page-interleave rank's local row, a SWA layer's mapped slot,
none on a layer another layer-split rank keeps), and a unified SWA pool's rows. The expectations,
the staging of locs, the coverage table and the kinds' buffers (layer_buffers.py) read them; no
module outside pools/kinds/ branches on a kind's trait to find a row.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from pools.dtypes import dtype_spec
from pools.kinds.fixed_geometry import (
    DRAFT_HOST_LAYERS,
    DRAFT_RUNNERS,
    LAYER_SHARD_RANK,
    LAYER_SHARD_SIZE,
    PAGE_SHARD_RANK,
    PAGE_SHARD_SIZE,
    UNIFIED_ENTRY_ALIGN,
)

Geometry = Any  # scenarios.model.Geometry, a layer above this one


def loc_slots(g: Geometry) -> int:
    """How many token ids a loc may hold: the pool's size + page_size rows, or on a
    page-interleave pool every rank's (a rank's rows are 1/PAGE_SHARD_SIZE of the ids); on a
    DCP rank's pool the global ids of every rank (id // dcp_size is the rank's row)."""
    rows = g.size + g.page_size
    return rows * (PAGE_SHARD_SIZE if g.kind.page_interleave else g.dcp_size)


def landing_rows(
    g: Geometry,
    layer_id: int,
    slots: Sequence[int],
    swa_mapping: Optional[Sequence[int]],
    positions: Optional[Sequence[int]] = None,
) -> list[Optional[int]]:
    """The row each token id of `slots` takes in the layer's buffers, in token order; None for a
    token this pool's rank does not keep (a page another page-interleave rank owns, any token of
    a layer another layer-split rank keeps, a token at another DCP rank's position).
    `swa_mapping`: the full-to-SWA mapping in effect, which a SWA layer's ids go through;
    `positions`: each token's position in its request, where the batch carries them."""
    if layer_id not in owned_layers(g):
        return [None] * len(slots)
    if g.dcp_size > 1 and g.kind.latent:
        return mla_dcp_rows(g, slots)
    if g.dcp_size > 1:
        return dcp_rows(g, slots, positions)
    if g.kind.swa and layer_id in g.swa_layer_ids:
        return [swa_mapping[slot] for slot in slots]
    if g.kind.hisparse:
        return hisparse_device_slots(g, torch.tensor(list(slots), dtype=torch.int64)).tolist()
    if g.kind.page_interleave:
        return [page_interleave_row(g, slot) for slot in slots]
    return list(slots)


def dcp_rows(
    g: Geometry, slots: Sequence[int], positions: Optional[Sequence[int]]
) -> list[Optional[int]]:
    """A DCP rank's rows: global id // dcp_size, for the tokens whose position is the rank's
    (position % dcp_size == dcp_rank). A batch without positions masks nothing: SGLang's triton
    backend then hands the door the batch's dcp_kv_mask, which only a ROCm batch carries."""
    if positions is None:
        return [slot // g.dcp_size for slot in slots]
    return [
        slot // g.dcp_size if position % g.dcp_size == g.dcp_rank else None
        for slot, position in zip(slots, positions)
    ]


def mla_dcp_rows(g: Geometry, slots: Sequence[int]) -> list[Optional[int]]:
    """An MLA DCP rank's rows: the pool takes every rank's global ids (0.5.23's
    set_mla_kv_buffer, a loc not declared resolved) and keeps those it owns, id % dcp_size ==
    dcp_rank, at row id // dcp_size, whatever the tokens' positions."""
    return [slot // g.dcp_size if slot % g.dcp_size == g.dcp_rank else None for slot in slots]


def index_key_rows(g: Geometry, layer_id: int, slots: Sequence[int]) -> list[Optional[int]]:
    """The rows a DSA layer's indexer keys take, in token order: the logical ids (a HiSparse DSA
    pool keeps them by logical id too), a page-interleave rank's local rows of its own pages,
    none on a layer another layer-split rank keeps."""
    if layer_id not in owned_layers(g):
        return [None] * len(slots)
    if g.kind.page_interleave:
        return [page_interleave_row(g, slot) for slot in slots]
    return list(slots)


def entry_bytes(layer_num: int, layer_bytes: int) -> int:
    """A unified pool's slot entry: every layer's rows side by side, rounded up to SGLang's
    ENTRY_ALIGN_BYTES."""
    return -(-layer_num * layer_bytes // UNIFIED_ENTRY_ALIGN) * UNIFIED_ENTRY_ALIGN


def hisparse_device_slots(g: Geometry, slots: torch.Tensor) -> torch.Tensor:
    """The device slots of logical token ids in a HiSparse pool's mapping: each page one page up,
    the last page to page 1 (page 0, the padding sink, stays), offsets kept. A pool that writes
    the logical id, or translates twice, writes a page off; the reach scenario's high ids stay
    high, and its last page lands on slot 1."""
    page, pages = g.page_size, g.size // g.page_size
    number, offset = slots // page, slots % page
    return torch.where(number == 0, slots, (number % pages + 1) * page + offset)


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


def owned_layers(g: Geometry) -> range:
    """The layers a layer-split pool's rank keeps (get_layer_shard_range): a contiguous share,
    the first `layers % size` ranks one layer more; every layer on other pool kinds."""
    if not g.kind.layer_split:
        return g.layer_ids
    base, rest = divmod(g.layer_num, LAYER_SHARD_SIZE)
    start = LAYER_SHARD_RANK * base + min(LAYER_SHARD_RANK, rest)
    return range(start, start + base + (1 if LAYER_SHARD_RANK < rest else 0))
