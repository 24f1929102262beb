"""Option parsing shared by the verbs: comma lists, choices from a registry, device and --out,
and the number types that refuse, at the command line, every value a run could not take to its
end (a seed the results store cannot hold, a count past what a machine runs)."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Optional

from harness.exit_codes import UsageError

# The results store keeps a run's seed in an int64 column, and numpy's generators (the bench's
# bootstrap) take no negative seed: 0 <= seed < 2**63 is what every verb can carry to its end.
SEED_LIMIT = 2**63
# No count of checks, examples, jobs or tokens above this is a run anyone can wait for; it keeps
# a typo (or a drawn argv) from asking for an allocation or a loop that cannot end.
COUNT_LIMIT = 10**9
# Seconds: about 31 years; past it time.monotonic() deadlines and thread waits overflow.
SECONDS_LIMIT = 1e9


def csv_list(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def choose(values: Optional[list[str]], known: Iterable[str], what: str) -> list[str]:
    known = list(known)
    if values is None:
        return list(known)
    unknown = [value for value in values if value not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}; choose from {', '.join(known)}")
    if not values:
        raise UsageError(f"--{what} needs at least one value")
    return values


def check_device_and_out(device: Optional[str], out: Path) -> None:
    """Usage errors shared by the verbs that run writes: an
    unknown or absent device, a bad --out."""
    if device is not None:
        from harness.plan.devices import unavailable_reason  # torch: only when a device is named

        try:
            reason = unavailable_reason(device)
        except ValueError as error:
            raise UsageError(str(error)) from None
        if reason:
            raise UsageError(f"device {device} is not available here: {reason}")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder")
    check_writable(out, "--out")


def check_writable(folder: Path, what: str) -> None:
    """Fail before a run, not after it: the nearest existing folder of `folder` must take a new
    entry. Probed by creating one (root passes every permission check that os.access makes, and
    /proc or a read-only mount refuse only a real write); nothing is left behind."""
    existing = Path(os.path.abspath(folder))
    while not existing.exists():
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is not a folder")
        tempfile.TemporaryDirectory(prefix=".kvh-probe-", dir=existing).cleanup()
    except OSError as error:
        raise UsageError(f"{what} {folder} cannot be written: {error.strerror or error}") from None


def _whole(value: str, low: int, high: int) -> int:
    # ASCII digits only: str.isdigit() takes "²", which int() then refuses.
    text = value.strip()
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 30:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}")
    number = int(text)
    if not low <= number <= high:
        raise argparse.ArgumentTypeError(f"expected a whole number in [{low}, {high}], got {value}")
    return number


def positive_int(value: str) -> int:
    """An argparse type for counts: a whole number from 1 to COUNT_LIMIT."""
    return _whole(value, 1, COUNT_LIMIT)


def count_int(value: str) -> int:
    """An argparse type for counts that may be zero (--examples): 0 to COUNT_LIMIT."""
    return _whole(value, 0, COUNT_LIMIT)


def seed_int(value: str) -> int:
    """An argparse type for --seed: a whole number the results store and every generator take,
    0 <= seed < 2**63 (a larger one would run every check, then fail to be written)."""
    return _whole(value, 0, SEED_LIMIT - 1)


def positive_float(value: str) -> float:
    """An argparse type for durations: a finite number above zero, at most SECONDS_LIMIT."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 < number <= SECONDS_LIMIT:  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"must be > 0 and <= {SECONDS_LIMIT:g}, got {value}")
    return number


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    """An argparse type for a finite number in [low, high] (a threshold, a level)."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if not low <= number <= high:  # NaN fails both comparisons
            raise argparse.ArgumentTypeError(f"must lie in [{low:g}, {high:g}], got {value}")
        return number

    return parse


class LazyHelp(str):
    """An option's help whose text is computed only when help is shown: listing a registry's
    names (backends, dtypes, engines) imports torch, which a usage error or a run that never
    prints help should not pay for. argparse expands help with `help % params`, so the text is
    made there; everywhere else this reads as the placeholder."""

    def __new__(cls, make: Callable[[], str]) -> LazyHelp:
        help_text = super().__new__(cls, "(computed when shown)")
        help_text._make = make
        return help_text

    def __mod__(self, params: object) -> str:
        return self._make() % params
