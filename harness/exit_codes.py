"""Exit codes and the user-facing errors of `kvh`, in one place every verb imports.

A CI job reads the exit code, so each code means one thing: 1 is findings and nothing else.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
EXIT_TERMINATED = 143  # SIGTERM (what a CI timeout sends), as a shell reports it


class Interrupted(KeyboardInterrupt):
    """A verb stopped by a signal (`signum`: SIGINT or SIGTERM). A KeyboardInterrupt, so that the
    one path that keeps what a stopped run finished handles both; like Ctrl-C it passes through
    Hypothesis and every `except Exception` (a SUT failure is data) untouched."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_of(interrupt: KeyboardInterrupt) -> str:
    """SIGTERM for an Interrupted(SIGTERM), else SIGINT (a plain KeyboardInterrupt is Ctrl-C)."""
    return signal.Signals(getattr(interrupt, "signum", signal.SIGINT)).name


def interrupted_exit_code(interrupt: KeyboardInterrupt) -> int:
    """143 for SIGTERM, 130 for SIGINT: what a shell reports for a process the signal killed."""
    return EXIT_TERMINATED if signal_of(interrupt) == "SIGTERM" else EXIT_INTERRUPTED


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside, SIGTERM raises Interrupted(SIGTERM) where the main thread is (in Hypothesis,
    a SUT call, a wait on a worker), as Ctrl-C raises KeyboardInterrupt; the previous handler is
    restored on the way out. Outside the main thread (signals are only handled there) it does
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class UsageError(Exception):
    """Bad input from the user (a value, a file, an output that cannot be written): reported as
    one line, exit code 2."""


class HeldSignals:
    """SIGINT and SIGTERM remembered instead of raised, from `hold()` until `release()`: the
    final writes of a run finish whatever arrives meanwhile, so its results are never half
    written. `release()` restores the previous handlers and returns the first signal held."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def hold(self) -> HeldSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._remember)
        return self

    def _remember(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum

    def release(self) -> int | None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        return self.signum
