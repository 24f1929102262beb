"""What one run of a scenario left behind, as data: every buffer's bytes, the caller's
tensors after the calls, and where it raised. The oracles compare these; harness/run/execute.py
makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from pools.kinds.layer_buffers import LayerBuffer
from scenarios.model import Scenario

CANARY = 0xA5


CALLER_TENSORS = ("k", "v", "k_rope", "idx_k", "idx_v", "qsa_state", "qsa_ck")


BUILDING, STAGING, WRITING, READING = (
    "building the pool",
    "staging",
    "writing",
    "reading the buffers",
)


@dataclass(frozen=True)
class ErrorPlace:
    """Where a run raised, as data: the stage, and for a write the forward, the layer and the
    door (the outermost pool method on the traceback; "" when the call site itself raised)."""

    stage: str
    forward: Optional[int] = None
    layer: Optional[int] = None
    door: str = ""

    def describe(self) -> str:
        """The place as text; a write keeps the "forward F, layer L" that findings always said."""
        if self.stage == WRITING:
            return f"forward {self.forward}, layer {self.layer}"
        if self.stage == STAGING:
            return f"forward {self.forward}, staging its locs"
        return self.stage


@dataclass
class Execution:
    """A run's snapshot. When the run raised, `buffers` and `caller` hold what was written (and
    handed back) before the raise, so two runs that raised alike can still be compared."""

    buffers: dict[str, torch.Tensor] = field(default_factory=dict)  # name -> (rows, bytes) uint8
    caller: dict[str, torch.Tensor] = field(default_factory=dict)  # name -> flat uint8
    error: Optional[str] = None
    error_at: Optional[str] = None  # the place as text: "forward 0, layer 1"
    error_type: Optional[str] = None  # the exception's class name
    error_place: Optional[ErrorPlace] = None
    # The harness-caused kind of the raise (harness/compare/error_causes.py), decided where it
    # was caught: "" when the release answers for it, or when the run did not raise.
    error_cause: str = ""
    write_ns: int = 0
    backend: str = ""  # the call site's backend (the value oracle's scope)
    # Where the release's own backend code called a write door ("triton_backend.py:2340 in
    # forward_decode"), when its real code ran (backends/real_code.py).
    release_sites: tuple[str, ...] = ()
    # The release functions its writes ran, first calls in order ("memory_pool.py:1270
    # KVWriteLoc.for_batch"; harness/run/release_trail.py), on a foreign SUT.
    release_trail: tuple[str, ...] = ()
    # The buffers whose reserved slot 0 the store's policy kept (a judge's run says so).
    kept_sinks: frozenset[str] = frozenset()
    # name -> the dtype the pool's reader returns ("torch.float8_e4m3fn"): an attention backend
    # reads the cache through it, so a reader that hands back the raw storage differs.
    reader_dtypes: dict[str, str] = field(default_factory=dict)


def as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.detach().to("cpu").contiguous()
    rows = tensor.shape[0] if tensor.dim() else 1
    if tensor.dim() > 1 and rows == 0:  # a buffer of no rows (a layer-split peer's layer)
        return torch.empty((0, tensor[:0].view(torch.uint8).shape[1:].numel()), dtype=torch.uint8)
    return (
        tensor.reshape(rows, -1).view(torch.uint8) if tensor.numel() else tensor.view(torch.uint8)
    )


def layer_buffers(scenario: Scenario, layer_id: int) -> tuple[LayerBuffer, ...]:
    """A layer's buffers, as its kind's record says (pools/kinds/layer_buffers.py)."""
    g = scenario.geometry
    return g.kind.buffers(g, layer_id)


def buffer_names(scenario: Scenario, layer_id: int) -> tuple[str, ...]:
    return tuple(buffer.name for buffer in layer_buffers(scenario, layer_id))
