"""Option parsing shared by the verbs: comma lists, choices from a registry, device and --out."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Iterable, Optional

from harness.exit_codes import UsageError
from harness.plan.devices import unavailable_reason


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


def positive_int(value: str) -> int:
    """An argparse type for counts: a whole number above zero."""
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}")
    return int(value)


def positive_float(value: str) -> float:
    """An argparse type for durations: a number above zero."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return number
