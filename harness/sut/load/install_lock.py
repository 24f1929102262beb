"""One install of a release at a time: an exclusive `fcntl.flock` on a lock file in the SUT cache.

Two `kvh sut install sglang==X` at once (two CI jobs on one cache, or a run installing what it
was asked to try) shared one `.partial` folder: the second removed or renamed it under the first.
With the lock, the second waits, then finds the release installed and reuses it. The kernel drops
the lock when its holder exits, however it ends, so a killed install never leaves it held; the
lock file itself stays (removing it would let a third process lock a different file)."""

from __future__ import annotations

import fcntl
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


def _say_waiting(what: str) -> None:
    print(f"kvh: waiting for another install of {what} to finish", file=sys.stderr)


@contextmanager
def held(
    lock_file: Path, what: str, on_wait: Callable[[str], None] = _say_waiting
) -> Iterator[None]:
    """Hold the exclusive lock on `lock_file` (created with its folder) while inside; where
    another process holds it, call `on_wait(what)` once and wait for it."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(what)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
