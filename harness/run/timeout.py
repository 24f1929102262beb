"""A wall-clock limit for SUT calls, so a hanging pool becomes a finding, not a stuck run.

It uses SIGALRM, so it works in the main thread of a Unix process; elsewhere it does not limit
(isolated worker processes are the robust answer for code that hangs inside C).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator, Optional


class SutTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: Optional[float]) -> Iterator[None]:
    usable = (
        seconds
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise SutTimeout(f"no return within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
