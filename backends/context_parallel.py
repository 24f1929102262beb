"""The context-parallel write helper, single-process: N ranks simulated in one process.

SGLang's `cp_allgather_and_save_kv_cache` (0.5.12-0.5.14, layers/utils/cp_utils.py) and
`ZigzagCPStrategy.materialize_full_kv` (0.5.23, layers/cp/zigzag.py): each rank holds a zigzag
share of the sequence (rank r holds blocks r and 2N-1-r of 2N), the shares are all-gathered
(padded to the longest share, then trimmed), put back in token order, and the full sequence is
written at the cache loc (the encoder loc on cross-attention layers) with the layer's scales.
0.5.12-0.5.14 gather k and v separately; 0.5.23 concatenates them and gathers once. The caller's
k and v stay untouched: the pool divides the gathered copies.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import torch

from backends import cp_release
from backends.call_shapes import LAYER_SCALES, CallSiteModel, branch, eras_branches, swa_site
from backends.context import WriteRequest
from backends.entry import BF16_ONLY, EXTEND_AND_DECODE, MHA_POOLS, register_backend
from backends.era_calls import FOR_LAYER, decoder_swa, kv_write, layer_scales, write_loc
from backends.fa3 import FA3_REAL_CODE, fa3_style_write
from backends.focus import CP_BATCHES, FOCUS
from backends.skips import BackendSkip, never


def block_sizes(length: int, cp_size: int) -> list[int]:
    """2N blocks; the first length % 2N get one token more."""
    blocks = 2 * cp_size
    return [length // blocks + (1 if index < length % blocks else 0) for index in range(blocks)]


def zigzag_share(tensor: torch.Tensor, rank: int, cp_size: int) -> torch.Tensor:
    """What rank `rank` holds: blocks rank and 2N-1-rank, contiguous, in that order."""
    blocks = tensor.split(block_sizes(tensor.shape[0], cp_size))
    return torch.cat([blocks[rank], blocks[2 * cp_size - 1 - rank]]).contiguous()


def all_gather(shares: list[torch.Tensor]) -> torch.Tensor:
    """all_gather_into_tensor of shares padded to the longest, then each trimmed back."""
    longest = max(share.shape[0] for share in shares)
    padded = [torch.cat([s, s.new_zeros((longest - s.shape[0], *s.shape[1:]))]) for s in shares]
    gathered = torch.cat(padded)
    chunks = gathered.split(longest)
    return torch.cat([chunk[: share.shape[0]] for chunk, share in zip(chunks, shares)])


def restore_order(gathered: torch.Tensor, cp_size: int) -> torch.Tensor:
    """Undo the zigzag: the gathered order is b0, b(2N-1), b1, b(2N-2), ..."""
    sizes = block_sizes(gathered.shape[0], cp_size)
    order = [index for rank in range(cp_size) for index in (rank, 2 * cp_size - 1 - rank)]
    pieces = dict(zip(order, gathered.split([sizes[index] for index in order])))
    return torch.cat([pieces[index] for index in range(2 * cp_size)])


def gather_full(tensor: torch.Tensor, cp_size: int) -> torch.Tensor:
    shares = [zigzag_share(tensor, rank, cp_size) for rank in range(cp_size)]
    return restore_order(all_gather(shares), cp_size)


def gathered_kv_write(
    req: WriteRequest, era: str, gather: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    """The MHA CP write of `era` with `gather` as its all-gather-and-restore: in one process
    (gather_full) or across a torch.distributed group (backends/cp_distributed.py)."""
    cache_loc, swa = req.cache_loc(), decoder_swa(req)
    if era == "current":
        kv = gather(torch.cat([req.k, req.v], dim=-1).contiguous())
        widths = [req.k.shape[-1], req.v.shape[-1]]
        k_full, v_full = (part.contiguous() for part in kv.split(widths, -1))
        swa = None if swa is None else swa[: cache_loc.shape[0]]
    else:
        k_full, v_full = gather(req.k.contiguous()), gather(req.v.contiguous())
    loc, keywords = write_loc(req, era, loc=cache_loc, swa_loc=swa)
    kv_write(req, loc, keywords, k_full, v_full, layer_scales(req))


# The if tests that choose each modelled write call, per era, as the releases' files have
# them (harness/sut/probe/census_branches.py; derived from 0.5.12, 0.5.13, 0.5.14, 0.5.23).
BRANCHES = eras_branches(
    (("legacy", "bundled"), (branch("cp_allgather_and_save_kv_cache"),)),
    (
        ("kwarg",),
        (
            branch("cp_allgather_and_save_kv_cache", "swa_loc is not None"),
            branch("cp_allgather_and_save_kv_cache", "swa_loc is None"),
        ),
    ),
    (("bundled", "current"), (branch("materialize_full_kv"),)),
)


CENSUS = CallSiteModel(
    ("sglang/srt/layers/utils/cp_utils.py", "sglang/srt/layers/cp/zigzag.py"),
    swa_site("cache_loc", LAYER_SCALES, current="for_layer", swa="swa_loc"),
    unmodelled_functions={
        "materialize_full_mla_kv": "CP over MLA pools is a declared skip "
        "(cp-mla) of backends/context_parallel.py"
    },
    branches=BRANCHES,
)


# A decode batch of 2N tokens and more: one a release whose mode test took decode through CP
# would split (the others have fewer tokens than 2N blocks need).
DECODE_BATCH_OF_2N = ("small-scaled",)


@register_backend(
    name="cp",
    order=140,
    real_code_gap="one process runs the model: the CP write all-gathers k/v over the CP process "
    "group before the pool call (0.5.12-0.5.14 layers/utils/cp_utils.py "
    "cp_allgather_and_save_kv_cache; 0.5.22-0.5.23 FlashAttentionBackend.forward_extend -> "
    "layers/cp/zigzag.py ZigzagCPStrategy.materialize_full_kv). Measured on 0.5.23 in one "
    "process, its rank stated and its metadata its own build_metadata's: materialize_full_kv "
    "stops at zigzag.py 475, get_parallel().attn_cp_group, whose all_gather_into_tensor (488) "
    "needs the other rank's share from another process. On the ranks of kvh run's CP group and "
    "of kvh cp, which join the release's own CP group (backends/cp_release.py), its code writes",
    # Release code only on a rank that joined the release's CP group (kvh cp).
    real_code=replace(
        FA3_REAL_CODE,
        in_group=cp_release.group_joined,
        shard=cp_release.shard_for_rank,
    ),
    census=CENSUS,
    device_type="cuda",
    pool_kinds=MHA_POOLS,
    # A CP rank decodes too: no release takes a decode batch through CP, so its backend writes
    # it as fa3 does, and a release that did (a mode test turned) is a finding.
    modes=EXTEND_AND_DECODE,
    focus={
        "extend": FOCUS["extend"] + CP_BATCHES,
        "decode": FOCUS["decode"] + DECODE_BATCH_OF_2N,
    },
    dtypes=BF16_ONLY,
    summary="context-parallel all-gather write of an extend, N zigzag ranks in one process; "
    "a decode written as fa3 writes it",
    skips=(
        BackendSkip(
            "cp-mla",
            "MLA pools",
            "only 0.5.23 writes MLA under CP "
            "(materialize_full_mla_kv); 0.5.12 fa3 passed scales to the MLA "
            "set_kv_buffer, which takes none",
            never,
            "layers/cp/zigzag.py",
        ),
    ),
)
def write(req: WriteRequest, era: str, mode: str) -> None:
    if not req.save_kv_cache:
        return
    cp_size = req.forward_batch.attn_cp_size
    # Only extend lengths on the host are each held to the floor (seq_lens alone are not).
    requests = (req.forward_batch.extend_lens_on_host and req.forward_batch.requests) or ()
    if (
        mode == "decode"
        or req.k.shape[0] < 2 * cp_size
        or any(span.extend < 2 * cp_size for span in requests)
    ):
        # A decode, or too few tokens for 2N blocks (in the batch, or in one of the requests it
        # carries): the release does not take the batch through CP (0.5.22 on
        # ZigzagCPStrategy.can_apply: an extend of 2N tokens or more, each request too), and its
        # attention backend writes the caller's k and v itself, as fa3 does (a pool that scales
        # them in place scales the caller's). 0.5.12 to 0.5.14's can_cp_split raise for a
        # request that short instead: their scheduler never batches one.
        fa3_style_write(req, era, current=FOR_LAYER, mla_loc_wrapped=True)
        return
    gathered_kv_write(req, era, lambda tensor: gather_full(tensor, cp_size))
