"""Progress of a long verb on stderr: a tqdm bar (counts, rate, time left, the last step) when
stderr is a terminal, and otherwise the plain lines a CI log keeps, one per step."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


class ProgressReporter:
    """Call it with (steps done, steps in all, what just finished) after every step; close it
    (or use it as a context manager) at the end. `bar`: None decides from the stream."""

    def __init__(
        self, prefix: str, unit: str = "step", stream: TextIO | None = None, bar: bool | None = None
    ):
        self.prefix, self.unit = prefix, unit
        self.stream = stream if stream is not None else sys.stderr
        self.shows_bar = (
            bool(getattr(self.stream, "isatty", lambda: False)()) if bar is None else bar
        )
        self.started = time.monotonic()
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int, line: str) -> None:
        if not self.shows_bar:
            print(
                f"{self.prefix}: {line} ({time.monotonic() - self.started:.0f}s)",
                file=self.stream,
                flush=True,
            )
            return
        if self._bar is None:
            self._bar = tqdm(
                total=total,
                desc=self.prefix,
                unit=self.unit,
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
            )
        self._bar.total = total
        self._bar.update(done - self._bar.n)
        self._bar.set_postfix_str(line)

    def message(self, line: str) -> None:
        """A line that stays (a warning, a finding), printed above the bar when there is one."""
        if self._bar is not None:
            self._bar.write(f"{self.prefix}: {line}", file=self.stream)
        else:
            print(f"{self.prefix}: {line}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
