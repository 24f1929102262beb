"""Why a SUT's run raised, decided once where the exception is caught (harness/run/execute.py):
the harness's own doing, or the release's.

An exception a SUT raises is normally judged by the exception oracle: raised where the baseline
did not is a finding against the release. Some exceptions say nothing about the release's write
path: the release read a field of an object the harness built and does not fill, imported a
module this machine lacks, called one of the harness's stand-ins for a GPU-only module, or
reached a GPU runtime that cannot start here. Each such cause is a record below (name, test,
reason); the first whose test holds names the cause, stored as data on the Execution
(`error_cause`, which travels through the worker protocol), and the verdict turns the
candidate's one-sided exception into a skip with the cause's reason (harness/sut/probe/limits.py
skip_reason). Never a pass, never a finding. Anything else, a genuine AttributeError on the
release's own objects included, stays the exception oracle's.

Only the exception itself and its explicit `raise ... from` chain are read, never the implicit
context: a release whose `except ImportError:` fallback then fails on its own is judged on the
fallback, which is the path it runs on a machine like this one.
"""

from __future__ import annotations

import traceback
import types
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from backends.real_code import DriverGap, StandInUsed
from backends.release_batch import HARNESS_FILLED

# The packages whose objects the harness builds and hands to a SUT: the call site's ForwardBatch,
# Layer and Metadata (backends/context.py), the real-code driver's stand-ins, scale objects and
# staging (scenarios/), the loader's stand-ins (harness/). Not pools/: it holds the builtin SUT's
# own pools (and the KVWriteLoc they share), so an AttributeError on one of those is the SUT's.
HARNESS_PACKAGES = ("harness", "backends", "scenarios")
# Where a GPU runtime raises because no device can start here, as (file, function) of the
# innermost frame: Triton finding no active driver, torch's CUDA lazy init on a build or machine
# without CUDA. Only these: a CUDA error from a kernel that did launch (torch.cuda.synchronize
# reporting an illegal access, say) is the release's.
GPU_RUNTIME_STARTS = (
    ("/triton/runtime/driver.py", "_create_driver"),
    ("/torch/cuda/__init__.py", "_lazy_init"),
)


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The exception and its explicit causes (`raise ... from`), outermost first."""
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def harness_built(obj: object) -> bool:
    """Whether the harness built `obj` (or its class): a class of HARNESS_PACKAGES, a bare
    SimpleNamespace, one of the loader's stand-in modules, or a SUT's own ForwardBatch the
    harness filled (backends/release_batch.py)."""
    if isinstance(obj, types.ModuleType):
        return bool(getattr(obj, "__kvwrite_standin__", False))
    if getattr(obj, "__dict__", {}).get(HARNESS_FILLED, False):
        return True  # a SUT's own class, instantiated and filled by the harness
    cls = obj if isinstance(obj, type) else type(obj)
    if cls is types.SimpleNamespace:
        return True
    return cls.__module__.split(".", 1)[0] in HARNESS_PACKAGES


def _driver_gap(error: BaseException) -> bool:
    return any(isinstance(link, DriverGap) for link in _chain(error))


def _stand_in_called(error: BaseException) -> bool:
    return any(isinstance(link, StandInUsed) for link in _chain(error))


def _import_here(error: BaseException) -> bool:
    return any(isinstance(link, ImportError) for link in _chain(error))


def _harness_object(error: BaseException) -> bool:
    # AttributeError.obj (Python 3.10+) is the object the failed lookup was made on; None where a
    # custom __getattr__ raised without it, which is then the release's to answer for.
    return any(
        isinstance(link, AttributeError)
        and getattr(link, "obj", None) is not None
        and harness_built(link.obj)
        for link in _chain(error)
    )


def _gpu_runtime(error: BaseException) -> bool:
    for link in _chain(error):
        frames = traceback.extract_tb(link.__traceback__)
        if frames and any(
            frames[-1].filename.endswith(path) and frames[-1].name == function
            for path, function in GPU_RUNTIME_STARTS
        ):
            return True
    return False


@dataclass(frozen=True)
class ErrorCause:
    """One harness-caused kind of exception. `reason` says why it is no finding; `{error}` in it
    is the exception as text (harness/run/execute.py describe_error), `{message}` the same
    without its class name."""

    name: str
    test: Callable[[BaseException], bool]
    reason: str

    def skip_reason(self, error: str) -> str:
        message = error.split(": ", 1)[1] if ": " in error else error
        return f"{self.name}: {self.reason.format(error=error, message=message)}"


HARNESS_CAUSES: tuple[ErrorCause, ...] = (
    # First: its message already says which field of which stand-in the release read.
    ErrorCause("real-code driver", _driver_gap, "{message}"),
    ErrorCause(
        "stand-in called",
        _stand_in_called,
        "the release called a kvwrite-harness stand-in for a module this machine lacks (no "
        "kernel can launch here): {error}",
    ),
    ErrorCause(
        "import here",
        _import_here,
        "the release imports a module this machine lacks or stands in (a GPU-only package, "
        "say): {error}",
    ),
    ErrorCause(
        "harness-built object",
        _harness_object,
        "the release reads an attribute of an object the harness built (its ForwardBatch, "
        "layer, metadata or stand-in), which the harness does not provide: {error}",
    ),
    ErrorCause(
        "GPU-only kernel",
        _gpu_runtime,
        "the release reached a GPU runtime, which cannot start on this machine: {error}",
    ),
)
CAUSES_BY_NAME = {cause.name: cause for cause in HARNESS_CAUSES}


def harness_cause(error: BaseException) -> Optional[ErrorCause]:
    """The harness-caused kind of `error`, or None when the release answers for it."""
    return next((cause for cause in HARNESS_CAUSES if cause.test(error)), None)


def cause_named(name: str) -> Optional[ErrorCause]:
    """The record an Execution's `error_cause` names ("" or an unknown name: None)."""
    return CAUSES_BY_NAME.get(name)
