"""The context-parallel write as the release's own code, on a rank of a torch.distributed group.

A release whose attention backend writes under prefill context parallelism (0.5.22 and 0.5.23:
FlashAttentionBackend.forward_extend, where `is_cp_active` sends k and v to the CP strategy's
`materialize_full_kv`, which all-gathers the ranks' shares over the attention CP group and writes
the full sequence) runs that write itself on each rank that `join_group` joined (`kvh cp`,
harness/cp/differential.py). The harness hands the release only what a server would: its
parallel widths and this rank (stated with the release's own derivations), the backend, and the
batch's tokens. The release builds its process groups, its CP strategy and metadata
(`prepare_cp_forward`) and splits the scenario's full k and v into this rank's share
(`shard_hidden_states`), as a model's layers do before attention.

Every release name used here is declared in backends/sglang_names.py (CP_RELEASE_NAMES).
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import Any, Callable, Optional

import msgspec
import torch

from backends.sglang_names import (
    BATCH_EXTEND_LENS,
    BATCH_SEQ_LENS,
    CP_CPU_ENGINE,
    CP_NAMES,
    CP_SHARD,
)

# What the harness states of a server's topology: every rank is an attention-CP rank, with no
# pipeline, attention-DP, MoE-DP, expert or decode-CP split. The rest is the release's to derive.
CP_STRATEGY = "zigzag"
# How long a rank waits in a collective for its peers: shorter than a check's own limit, so that a
# peer that never arrives is an error of that check, not a hang of the run.
COLLECTIVE_TIMEOUT_S = 30
# The group this process joined, once `join_group` did: a fact of the whole process, as
# torch.distributed's own default group is.
_JOINED: list[int] = []


def cpu_engine(device_type: str) -> None:
    """Before the release is imported on a CPU rank: the release's own switch for serving on a
    CPU (gloo collectives; without it, its all-gather is a custom op registered for CUDA only)."""
    if device_type == "cpu":
        os.environ[CP_CPU_ENGINE[0]] = CP_CPU_ENGINE[1]


@cache  # a process holds one release; shard_for_rank asks on every write
def _release_functions() -> dict[str, Callable[..., Any]]:
    """The release's functions this driver calls, by role; a KeyError names the first missing."""
    found = {}
    for role, (module, name) in CP_NAMES.items():
        try:
            found[role] = getattr(importlib.import_module(module), name)
        except Exception as error:  # noqa: BLE001 - whatever its import raises, it has none here
            raise KeyError(f"{module}.{name} ({type(error).__name__}: {error})") from None
    return found


def not_offered() -> str:
    """Why this process's release offers no CP write to drive ("" where it offers one): it
    lacks a function of CP_NAMES. Asked once the release is loaded, so that a release without
    one gets no CP group (harness/sut/worker/cp_group.py) whose ranks would only run the model."""
    try:
        _release_functions()
    except KeyError as missing:
        return f"the release has no {missing.args[0]}"
    return ""


def join_group(rank: int, world: int, backend: str) -> Optional[str]:
    """Join this process, already in a torch.distributed group of `world` ranks, to the release's
    attention CP group, with the release's own functions; why not, where it cannot (None: it
    joined). Called once per rank process, before any write."""
    try:
        release = _release_functions()
    except KeyError as missing:
        return f"the release has no {missing.args[0]}"
    try:
        return _join(release, rank, world, backend)
    except Exception as error:  # the release's own set-up refused: a limit, never a finding
        return f"the release's CP group set-up raised {type(error).__name__}: {error}"


def _join(
    release: dict[str, Callable[..., Any]], rank: int, world: int, backend: str
) -> Optional[str]:
    release["init_distributed"](
        world_size=world, rank=rank, local_rank=rank, backend=backend,
        distributed_init_method="env://",
    )  # fmt: skip
    widths = release["derive_widths"](
        tp_size=world, attn_cp_size=world, attn_dp_size=1, moe_ep_size=1, moe_dp_size=1,
        dcp_size=1, dcp_enabled=False,
    )  # fmt: skip
    ranks = release["derive_ranks"](
        world_rank=rank, tp_size=world, ep_join_rank_offset=0, attn_cp_size=world,
        attn_tp_size=widths["attn_tp_size"], moe_dp_size=1, moe_ep_size=1,
    )  # fmt: skip
    stated = dict(
        tp_size=world, pp_size=1, attn_cp_size=world, attn_dp_size=1, moe_dp_size=1,
        shared_experts_tp_size=None, enable_prefill_cp=True, cp_strategy=CP_STRATEGY,
    )  # fmt: skip
    # Every configured leaf as a published server config has it: the release's defaults.
    defaults = msgspec.structs.asdict(release["config"]())
    release["parallel"]().override_permanently(**{**defaults, **stated, **widths, **ranks})
    release["init_model_parallel"](backend=backend)
    # Joined once its groups are built. Whether its CP strategy is on is the release's own
    # behaviour, judged by the writes: one that never builds it writes as if CP were off.
    _JOINED.append(world)
    return None


def group_joined() -> bool:
    """Whether this process joined the release's CP group (`join_group` succeeded). Read from
    what the join recorded, not by asking the release again: the question is asked inside each
    check, whose release trail must hold only the write's own calls."""
    return bool(_JOINED)


def host_requests(batch: Any) -> dict[str, Any]:
    """An extend batch's fields for the requests of the harness's `batch` (backends/context.py
    ForwardBatch: scenarios.model.RequestSpan each) as a server's batch carries them on the
    host, which the release's CP strategy cuts the batch by: their seq_lens, and their extend
    lengths unless the batch keeps those on the device only; none where the scenario gives none
    for the written rows (the release then takes the batch as one sequence, as it does a batch
    without them)."""
    requests = batch.requests
    if requests is None:
        return {}
    seq_lens = torch.tensor([span.length for span in requests], dtype=torch.int64)
    if not batch.extend_lens_on_host:
        return {BATCH_SEQ_LENS: seq_lens}
    return {BATCH_EXTEND_LENS: [span.extend for span in requests], BATCH_SEQ_LENS: seq_lens}


def shard_for_rank(batch: Any, tensors: tuple[Any, ...]) -> tuple[Any, ...]:
    """Where the release puts this batch through CP: its metadata built by its own
    `prepare_cp_forward`, and each full-sequence tensor cut to this rank's share by its
    strategy. A batch the strategy does not take (fewer than 2N tokens) keeps its tensors."""
    release = _release_functions()
    if not release["is_active"](batch):
        return tensors
    release["prepare"](batch)
    strategy = release["strategy"]()
    return tuple(getattr(strategy, CP_SHARD)(tensor, batch) for tensor in tensors)
