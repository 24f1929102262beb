"""Progress on stderr: a bar with counts and rate on a terminal, plain lines in a log."""

from __future__ import annotations

import io
import re

from harness.cli.progress import ProgressReporter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_plain_line_per_step() -> None:
    log = io.StringIO()
    with ProgressReporter("kvh bench", unit="cell", stream=log) as progress:
        progress(1, 2, "mha bf16 legacy: median 1.0 us")
        progress(2, 2, "mha bf16 current: median 1.1 us")
        progress.message("interrupted")
    lines = log.getvalue().splitlines()
    assert not progress.shows_bar and len(lines) == 3
    assert re.fullmatch(r"kvh bench: mha bf16 legacy: median 1\.0 us \(\d+s\)", lines[0])
    assert lines[2] == "kvh bench: interrupted"


def test_a_terminal_gets_a_bar_with_counts_and_rate() -> None:
    terminal = Terminal()
    with ProgressReporter("kvh bench", unit="cell", stream=terminal) as progress:
        assert progress.shows_bar
        for done in (1, 2, 3):
            progress(done, 3, f"cell {done}")
    shown = terminal.getvalue()
    assert "kvh bench" in shown and "3/3" in shown and "cell/s" in shown and "cell 3" in shown
    assert "(0s)" not in shown and shown.count("\n") <= 1  # a bar redrawn in place, not lines
