"""The release functions a write ran: where to look when a release's write is judged wrong.

A finding on a release names the line that raised, or (for its own backend code) where that code
called the pool. A wrong byte written through the call-site model names neither: the model
called the door, and the fault may lie in any release function on the way (KVWriteLoc.for_batch,
the door, a store helper). While a foreign SUT writes, a trace function records each function of
the release (a file under a `sglang/` folder) called for the first time, as "memory_pool.py:1270
KVWriteLoc.for_batch", in call order. It names the functions that ran, not the faulty line.

The trace function runs for each Python call only until a code object is seen once, and returns
None so no line is traced. It is not installed where another trace function (a debugger, a
coverage tool) is active, and never for the builtin pools.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable, Optional, TypeVar

RELEASE_FOLDER = f"{os.sep}sglang{os.sep}"
T = TypeVar("T")


def describe(code: CodeType) -> str:
    return f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_qualname}"


class ReleaseTrail:
    """The release functions first called while `recording`, over every write of one execution."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.functions: list[str] = []
        self._seen: set[CodeType] = set()

    def _first_calls(self, frame: FrameType, event: str, argument: Any) -> Optional[Any]:
        code = frame.f_code
        if code not in self._seen:
            self._seen.add(code)
            if RELEASE_FOLDER in code.co_filename:
                self.functions.append(describe(code))
        return None  # no line of the frame is traced

    def recording(self, write: Callable[..., T]) -> Callable[..., T]:
        """`write`, recording the release functions each call runs; `write` itself where the
        trail is off, so an execution that records nothing pays nothing per write."""
        if not self.enabled:
            return write

        def recorded(*args: Any, **kwargs: Any) -> T:
            if sys.gettrace() is not None:  # a debugger's or a coverage tool's: left alone
                return write(*args, **kwargs)
            sys.settrace(self._first_calls)
            try:
                return write(*args, **kwargs)
            finally:
                sys.settrace(None)

        return recorded
