"""Deterministic shards of the run's cells, for nightly jobs split across machines.

`--shard i/N` keeps the cells whose stable hash falls in shard i: the same on every machine,
Python and PYTHONHASHSEED, and for any N every cell lands in exactly one shard. A cell is the
runner's unit (harness.run.cells.Cell.key: pool/dtype/backend:mode), whose baseline runs once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Optional


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as users write it
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """'i/N' with 1 <= i <= N; ValueError with a one-line message otherwise."""
    index, slash, count = text.partition("/")
    if not (slash and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise ValueError(f"--shard {text!r}: expected i/N with 1 <= i <= N, e.g. 2/3")
    return Shard(int(index), int(count))


def shard_of(cell_key: str, count: int) -> int:
    """The 1-based shard that owns `cell_key` among `count` shards."""
    digest = hashlib.sha256(cell_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(cell_key: str, shard: Optional[Shard]) -> bool:
    """Whether this run covers the cell; no shard covers everything."""
    return shard is None or shard_of(cell_key, shard.count) == shard.index


def partition(cell_keys: Iterable[str], count: int) -> list[list[str]]:
    """The cells of each of `count` shards, in the given order (for docs, tests and planning)."""
    shards: list[list[str]] = [[] for _ in range(count)]
    for key in cell_keys:
        shards[shard_of(key, count) - 1].append(key)
    return shards
