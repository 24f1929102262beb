"""The context-parallel write under torch.distributed: each rank gathers the group's shares.

A rank holds its zigzag share of the sequence (blocks r and 2N-1-r of 2N,
backends.context_parallel.zigzag_share), all-gathers the shares over the default process group
(padded to the longest share, as SGLang's all_gather_into_tensor, then trimmed), restores token
order and writes the full sequence into its own pool with its era's call site:
- MHA, as SGLang's cp_allgather_and_save_kv_cache / ZigzagCPStrategy.materialize_full_kv
  (the same call as the single-process simulation, backends.context_parallel);
- MLA, as 0.5.23's materialize_full_mla_kv: nope ++ rope gathered once, then
  set_mla_kv_buffer(layer, KVWriteLoc.for_batch(fb), nope, rope); the older releases had the
  model gather before attention and wrote the full sequence with a bare loc, which is what
  `bare_loc` gives the eras before `current`.
The rank and group size come from torch.distributed, as SGLang reads its CP group globally.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.distributed as dist

from backends.context import WriteRequest
from backends.context_parallel import block_sizes, gathered_kv_write, restore_order, zigzag_share
from backends.era_calls import FOR_BATCH, bare_loc

Materialize = Callable[[torch.Tensor], torch.Tensor]


class CollectiveFailed(BaseException):
    """The group broke (a peer died, hung or timed out). That is the group's failure, not the
    pool's, so it is not an Exception: the harness, which turns a SUT's exceptions into findings,
    lets it end the rank instead of carrying on with a group out of step."""


def share_lengths(length: int, cp_size: int) -> list[int]:
    """Tokens each rank holds: its two blocks."""
    sizes = block_sizes(length, cp_size)
    return [sizes[rank] + sizes[2 * cp_size - 1 - rank] for rank in range(cp_size)]


def all_gather_shares(share: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Every rank's share in rank order (still zigzag): padded to the longest, gathered, trimmed."""
    longest = max(lengths)
    padded = torch.cat([share, share.new_zeros((longest - share.shape[0], *share.shape[1:]))])
    chunks = [torch.empty_like(padded) for _ in lengths]
    try:
        dist.all_gather(chunks, padded.contiguous())
    except RuntimeError as error:
        raise CollectiveFailed(f"all_gather on rank {dist.get_rank()}: {error}") from error
    return torch.cat([chunk[:length] for chunk, length in zip(chunks, lengths)])


def own_share(full: torch.Tensor) -> torch.Tensor:
    """What this rank holds of the full sequence the scenario regenerates on every rank."""
    return zigzag_share(full, dist.get_rank(), dist.get_world_size())


def gather_unordered(full: torch.Tensor) -> torch.Tensor:
    """This rank's share gathered with the others, left in zigzag order."""
    return all_gather_shares(own_share(full), share_lengths(full.shape[0], dist.get_world_size()))


def materialize_full(full: torch.Tensor) -> torch.Tensor:
    """The full sequence in token order, as every rank rebuilds it from the group's shares."""
    return restore_order(gather_unordered(full), dist.get_world_size())


def gathered_write(
    req: WriteRequest, era: str, materialize: Materialize = materialize_full
) -> None:
    """The era's CP call site with `materialize` as its gather (planted faults swap it)."""
    if not req.save_kv_cache:
        return
    if req.is_mla:
        nope = req.k.shape[-1]
        latent = materialize(torch.cat([req.k, req.k_rope], dim=-1).contiguous())
        loc = bare_loc(req, era, loc=req.forward_batch.out_cache_loc, current=FOR_BATCH)
        req.pool.set_mla_kv_buffer(req.layer, loc, latent[..., :nope], latent[..., nope:])
        return
    gathered_kv_write(req, era, materialize)


def write(req: WriteRequest, era: str, mode: str) -> None:
    gathered_write(req, era)
