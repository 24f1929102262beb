"""Exit codes and the user-facing errors of `kvh`, in one place every verb imports.

A CI job reads the exit code, so each code means one thing: 1 is findings and nothing else.
"""

from __future__ import annotations

import signal
import sys
import threading

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


def unless_nothing_checked(code: int, nothing_checked: bool, sharded: bool) -> int:
    """`code`, or EXIT_USAGE with one line on stderr where a run that would exit 0 planned no
    check at all: a PASS is earned only by checks that could have failed. One share of a --shard
    run keeps its code: the run it is a share of says whether any share held a check."""
    if code != EXIT_OK or not nothing_checked or sharded:
        return code
    print(
        "kvh: the selection planned no check, so nothing was judged: no combination of it "
        "applies to the SUT (a backend of other eras, a kind not offered), or every one is left "
        "out by design (counted above)",
        file=sys.stderr,
    )
    return EXIT_USAGE


def signal_of(interrupt: KeyboardInterrupt) -> str:
    """SIGTERM for an Interrupted(SIGTERM), else SIGINT (a plain KeyboardInterrupt is Ctrl-C)."""
    return signal.Signals(getattr(interrupt, "signum", signal.SIGINT)).name


def interrupted_exit_code(interrupt: KeyboardInterrupt) -> int:
    """143 for SIGTERM, 130 for SIGINT: what a shell reports for a process the signal killed."""
    return EXIT_TERMINATED if signal_of(interrupt) == "SIGTERM" else EXIT_INTERRUPTED


class StopSignals:
    """While inside (`with StopSignals() as stop:`), SIGTERM raises Interrupted(SIGTERM) where the
    main thread is (in Hypothesis, a SUT call, a wait on a worker), as Ctrl-C raises
    Interrupted(SIGINT), and either signal is remembered.

    Python loses an exception raised where it cannot propagate: a signal handled while a garbage
    collector callback runs (Hypothesis keeps one in gc.callbacks, called at every collection), a
    `__del__` or a weakref callback becomes "Exception ignored in ..." and the code goes on, so a
    run signalled there would carry on to its end. A run loop therefore calls `raise_if_stopped()`
    after each check, which raises the remembered signal again; such a lost Interrupted is not
    printed. SIGINT is taken only where Python's own Ctrl-C handler is installed (an ignored
    SIGINT stays ignored). On the way out the previous handlers come back. Outside the main
    thread (signals are only handled there) it does nothing."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}
        self._previous_hook = None

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        taken = [signal.SIGTERM]
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            taken.append(signal.SIGINT)
        for signum in taken:
            self._previous[signum] = signal.signal(signum, self._interrupt)
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        if self._previous_hook is not None:
            sys.unraisablehook, self._previous_hook = self._previous_hook, None

    def _interrupt(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
        raise Interrupted(signum)

    def _unraisable(self, unraisable) -> None:
        # Raised again by raise_if_stopped: printing it would be a traceback for nothing.
        if not isinstance(unraisable.exc_value, Interrupted):
            self._previous_hook(unraisable)

    def raise_if_stopped(self) -> None:
        """Interrupted again, for a signal that came (its first raise may have been lost)."""
        if self.signum is not None:
            raise Interrupted(self.signum)


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
