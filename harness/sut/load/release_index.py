"""The releases of SGLang the package index has, in release order (PEP 440), for `kvh bisect`
and a range of `--sut` releases (`sglang>=0.5.12,<0.5.24`): what pip sees, so a release nobody
named is included."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)
EXACT = re.compile(r"^sglang==[A-Za-z0-9][A-Za-z0-9._+-]*$")


class ReleaseIndexError(Exception):
    """The package index could not be read."""


def index_versions(package: str = "sglang") -> list[str]:
    """Every version of `package` on the index pip is configured with, oldest first."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        check=False,
    )
    found = AVAILABLE.search(done.stdout)
    if done.returncode != 0 or found is None:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReleaseIndexError(
            f"pip index versions {package} failed (exit {done.returncode}): {said}"
        )
    return ordered(version.strip() for version in found.group(1).split(","))


def ordered(versions) -> list[str]:
    """Valid PEP 440 versions, oldest first, each once."""
    parsed = {}
    for text in versions:
        try:
            parsed[text] = Version(text)
        except InvalidVersion:
            continue
    return sorted(parsed, key=parsed.__getitem__)


def between(versions: list[str], low: str, high: str) -> list[str]:
    """`low`, every version strictly between, and `high` (release order)."""
    low_v, high_v = Version(low), Version(high)
    if not low_v < high_v:
        raise ValueError(f"{low} is not older than {high}")
    inside = [v for v in versions if low_v < Version(v) < high_v]
    return [low, *inside, high]


# `sglang` and a PEP 440 specifier set other than one exact release: `sglang>=0.5.12,<0.5.24`.
RANGE = re.compile(r"^sglang\s*((?:[<>!~]=?|==)\s*\S.*)$")


def release_range(spec: str) -> Optional[SpecifierSet]:
    """The specifier of a `--sut` that names a range of releases, or None for any other spec
    (`sglang==X` exactly is one release). An unreadable specifier is a ValueError."""
    found = RANGE.match(spec.strip())
    if found is None or EXACT.match(spec.strip()):
        return None
    try:
        return SpecifierSet(found.group(1).replace(" ", ""))
    except InvalidSpecifier as error:
        raise ValueError(f"--sut {spec}: {error}") from None


def releases_in(specifier: SpecifierSet, versions: list[str]) -> list[str]:
    """The `sglang==X` specs of `versions` (release order) that `specifier` admits."""
    return [f"sglang=={v}" for v in versions if specifier.contains(Version(v), prereleases=False)]
