"""CUDA-graph capture and replay of one write, for timing without launch overhead.

A decode write is a handful of small kernels: on a GPU its time is mostly the CPU launching
them, which is not what SGLang pays when it serves under CUDA graphs. FlashInfer's bench and
tritonbench time under CUDA graphs by default for that reason. `graph_replay` warms a write up on
a side stream, captures one call of it into a `torch.cuda.CUDAGraph` and returns a step that
replays the graph: one call of the step is one write, with one launch.

The torch entry points come from a `GraphApi` argument (default `torch.cuda`), so the control
flow is tested on CPU with a fake (tests/test_bench_gpu_paths.py).
"""

from __future__ import annotations

from typing import Any, ContextManager, Optional, Protocol

import torch

from harness.bench.timers import Step
from harness.plan.devices import device_type


class GraphCaptureError(RuntimeError):
    """A write that cannot be captured in a CUDA graph (a host sync, a CPU-side dynamic shape,
    an allocation the capture forbids); the message says why, so the cell reports it."""


class GraphApi(Protocol):
    """The part of `torch.cuda` that capture and replay use."""

    def Stream(self) -> Any: ...  # torch's names
    def stream(self, stream: Any) -> ContextManager: ...
    def current_stream(self) -> Any: ...
    def CUDAGraph(self) -> Any: ...
    def graph(self, cuda_graph: Any) -> ContextManager: ...


def graph_replay(
    work: Step, device: str, graphs: Optional[GraphApi] = None, warmup: int = 3
) -> Step:
    """A step that replays one captured call of `work` on `device`.

    ValueError for a device that is not CUDA; GraphCaptureError, naming the cause, when `work`
    cannot be captured. An error during warm-up is the write's own and is raised as it is."""
    if device_type(device) != "cuda":
        raise ValueError(f"CUDA graphs need a cuda device, got {device}")
    graphs = graphs if graphs is not None else torch.cuda
    # Warm-up on a side stream, as torch's CUDA-graph docs require: lazy initialisation (cuBLAS
    # handles, Triton autotuning, the caching allocator's first blocks) must not be captured.
    side = graphs.Stream()
    side.wait_stream(graphs.current_stream())
    with graphs.stream(side):
        for _ in range(warmup):
            work()
    graphs.current_stream().wait_stream(side)
    captured = graphs.CUDAGraph()
    try:
        with graphs.graph(captured):
            work()
    except Exception as error:
        raise GraphCaptureError(capture_failure(error)) from error
    return captured.replay


def capture_failure(error: BaseException) -> str:
    """Why a capture failed, in one line: the first line of the error, with its type."""
    lines = str(error).strip().splitlines()
    cause = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return f"cannot capture the write in a CUDA graph: {cause}"
