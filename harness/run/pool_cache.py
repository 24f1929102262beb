"""Pools built once per (SUT module, geometry, device) and lent to every execution that shares
them: a check costs what its writes cost, not what its pool costs (issue 41).

A pool is taken out of the cache for one execution and handed back only when that execution
completed. Before it is lent again it must prove it is as it was built:
- idle: no tensor outside the pool still holds its buffers' storage (an execution's CPU snapshot
  aliases a CPU pool's buffers; the snapshot lives until its check is decided), so a snapshot is
  never overwritten under the oracles that read it;
- the same state: every attribute reachable from the pool (the SWA mapping register_mapping
  sets, memos, counters, sub-pools) fingerprints as it did after the build, and every tensor that
  is not a buffer holds the bytes it held then;
- the canary everywhere: the rows the last scenario could write (its expected slots and the
  padding sink) are restored to the canary, then one vectorised comparison per buffer shows that
  nothing else changed.
Any of these failing, the pool is dropped and built afresh; the stray write that made the check
fail was in the last run's snapshot, which the untouched oracle had already judged as before.

Only a module that says so reuses its pools (`REUSE_POOLS`: the builtin SUT and the judge); a
release or a user's pool is built per execution, as its constructor may need to run each time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any, Callable, Optional

import numpy as np
import torch

from harness.compare.byte_compare import all_canary
from harness.compare.expectations import PADDING_SINK, Expected, expected_writes
from harness.compare.snapshot import CANARY, layer_buffers
from harness.run.pool_buffers import raw_buffers
from harness.run.pool_factory import constructor_inputs
from scenarios.model import Scenario

# The capability a SUT module declares to have its pools reused (pools/builtin/sut.py, the judge).
REUSE_POOLS = "reuse_pools"
# Bytes of idle pools the cache keeps, least recently used dropped first (the last one handed
# back always stays): room for one nightly pool (40 MiB) and small ones. Each idle pool holds
# memory that no other allocation can use, and fresh memory costs a page fault per 4 KiB (up to
# 5 s a GiB on this project's virtual machines), while lending a pool saves less than building
# it costs: at 1 GiB the default run took 23-25 s and peaked at 2.8 GB resident, at 64 MiB 17 s
# and 1.1 GB, lending 606 pools against 609 (docs/bench.md has the table).
CACHE_BYTES = 64 << 20
# Below this, building a pool costs less than proving an idle one is as built (fingerprint,
# restore, canary test): measured on mha/bf16/plain's prefill, one example of 12 runs took 17 ms
# built each time and 27 ms lent again at 2^10 narrow slots (32 KiB), 36 and 29 ms at 2^14.
REUSE_MIN_BYTES = 256 << 10
_PRIMITIVE = (int, float, complex, str, bytes, bool, type(None), torch.dtype, torch.device)


@dataclass
class Lease:
    """A reusable pool and what it was when built."""

    key: tuple
    pool: Any
    module: Any  # held, so that the key's id() cannot be reused by another module
    storages: dict[int, int]  # storage pointer -> use count as the cache measures it
    state: tuple
    state_tensors: list[tuple[torch.Tensor, torch.Tensor]]  # (live tensor, its bytes at build)
    nbytes: int
    last: Optional[Scenario] = None  # the scenario it last ran, whose rows it may have written


@dataclass
class PoolCache:
    """The idle pools, and how often a pool was lent, built, or dropped (and why)."""

    entries: OrderedDict = field(default_factory=OrderedDict)
    counts: dict[str, int] = field(default_factory=dict)
    _expected: Optional[tuple[Scenario, Expected]] = None
    # The entries' bytes, kept as they come and go: summing them at every hand-back cost a
    # second of a default run.
    held_bytes: int = 0

    def lend(self, key: tuple) -> Optional[Lease]:
        lease = self.entries.pop(key, None)
        if lease is not None:
            self.held_bytes -= lease.nbytes
        return lease

    def hold(self, lease: Lease) -> None:
        """Keep `lease` idle, newest last, dropping the oldest beyond CACHE_BYTES (one stays)."""
        if lease.key in self.entries:
            self.held_bytes -= self.entries[lease.key].nbytes
        self.entries[lease.key] = lease
        self.entries.move_to_end(lease.key)
        self.held_bytes += lease.nbytes
        while self.held_bytes > CACHE_BYTES and len(self.entries) > 1:
            _, dropped = self.entries.popitem(last=False)
            self.held_bytes -= dropped.nbytes

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def expected(self, scenario: Scenario) -> Expected:
        """The last scenario's expected writes, derived once for all the pools it ran on."""
        if self._expected is None or self._expected[0] is not scenario:
            self._expected = (scenario, expected_writes(scenario))
        return self._expected[1]


CACHE = PoolCache()


def reuses_pools(module: Any) -> bool:
    return bool(getattr(module, REUSE_POOLS, False))


def _key(module: Any, scenario: Scenario, device: str) -> tuple:
    # Geometry is a mutable dataclass: its repr names every field. A QSA pool's ring is sized by
    # the scenario too, so a pool built for a short forward is never lent to a longer one.
    return (id(module), device, repr(scenario.geometry), constructor_inputs(scenario))


def take_pool(
    module: Any, scenario: Scenario, device: str, build: Callable, fill: Callable
) -> tuple[Any, Optional[Lease]]:
    """A pool for `scenario` with the canary in every buffer, and its lease (None: not to be
    handed back): an idle one that proves it is as built, or `build(module, scenario, device)`
    then `fill(pool, scenario)`."""
    if not reuses_pools(module):
        pool = build(module, scenario, device)
        fill(pool, scenario)
        return pool, None
    key = _key(module, scenario, device)
    lease = CACHE.lend(key)
    if lease is not None:
        reason = _unfit(lease)
        if reason is None:
            CACHE.count("reused")
            return lease.pool, lease
        CACHE.count(f"rebuilt: {reason}")
    pool = build(module, scenario, device)
    fill(pool, scenario)
    raw = raw_buffers(pool, scenario)
    if _nbytes(raw) < REUSE_MIN_BYTES:
        CACHE.count("built: small")
        return pool, None
    CACHE.count("built")
    storages = _storage_counts(raw)
    if storages is None:  # this torch cannot count a storage's users: never reused
        return pool, None
    state, tensors, provable = fingerprint(pool, set(storages))
    if not provable:
        CACHE.count("not reusable: state it cannot read")
        return pool, None
    return pool, Lease(
        key, pool, module, storages, state, [(t, t.clone()) for t in tensors], _nbytes(raw)
    )


def keep_pool(lease: Optional[Lease], scenario: Scenario) -> None:
    """Hand back the pool of an execution that completed (one that raised is dropped: its state
    is whatever the raise left), remembering the scenario whose rows it may have written."""
    if lease is None:
        return
    lease.last = scenario
    CACHE.hold(lease)


def _unfit(lease: Lease) -> Optional[str]:
    """None when the idle pool may be lent again (its last rows restored), else why not."""
    last, pool = lease.last, lease.pool
    # Each buffer read once, as the pool keeps it: the storage count and the canary check read
    # it so, the dirty rows through its slot rows.
    kept = [
        (buffer, buffer.read(pool))
        for layer_id in last.geometry.kv_layer_ids
        for buffer in layer_buffers(last, layer_id)
    ]
    raw = [tensor for _, tensor in kept]
    if _storage_counts(raw) != lease.storages:
        return "a snapshot still holds its buffers"
    state, _, _ = fingerprint(pool, set(lease.storages))
    if state != lease.state or any(
        not torch.equal(live, built) for live, built in lease.state_tensors
    ):
        return "its state changed"
    expected = CACHE.expected(last)
    for buffer, tensor in kept:
        rows = _byte_rows(buffer.slot_rows(tensor), lease.storages)
        if rows is None:
            return "a buffer is not a view of the pool's storage"
        written = expected.slot_index(buffer.name)
        rows[written[written < rows.shape[0]]] = CANARY
        if rows.shape[0] > PADDING_SINK:
            rows[PADDING_SINK] = CANARY
    if not all(all_canary(buffer) for buffer in raw):
        return "a row outside the last run's writes changed"
    return None


def _byte_rows(view: torch.Tensor, storages: dict[int, int]) -> Optional[torch.Tensor]:
    """`view` as (rows, bytes) uint8 sharing its storage (writes go to the pool), or None where
    the oracles' rows are a copy or a permutation (pools/builtin/layouts, page rows, DSA
    indexer)."""
    if view.untyped_storage().data_ptr() not in storages:
        return None
    try:
        rows = view.view(view.shape[0], -1) if view.dim() else view.view(1)
        return rows.view(torch.uint8)
    except RuntimeError:  # not expressible as a view: a stride the reshape cannot keep
        return None


def _storage_counts(raw: list[torch.Tensor]) -> Optional[dict[int, int]]:
    """Each buffer storage's use count, as measured with `raw` alive (the same measure at build
    and at reuse, so equal counts mean no tensor outside the pool holds the storage)."""
    use_count = getattr(torch._C, "_storage_Use_Count", None)
    if use_count is None:
        return None
    counts = {}
    for tensor in raw:
        storage = tensor.untyped_storage()
        counts[storage.data_ptr()] = use_count(storage._cdata)
    return counts


def _nbytes(raw: list[torch.Tensor]) -> int:
    seen = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in raw}
    return sum(seen.values())


def fingerprint(pool: Any, buffers: set[int]) -> tuple[tuple, list[torch.Tensor], bool]:
    """The pool's state as data (every attribute, recursively through lists, dicts and objects),
    its tensors that are not buffers (whose bytes must not change between runs either), and
    whether all of it could be read (an object without a __dict__ could hide state)."""
    tensors: list[torch.Tensor] = []
    seen: set[int] = set()
    opaque: list[str] = []

    def state(value: Any, depth: int) -> Any:
        if isinstance(value, torch.Tensor):
            pointer = value.untyped_storage().data_ptr()
            if pointer not in buffers:
                tensors.append(value)
            return ("tensor", pointer, value.storage_offset(), tuple(value.shape),
                    value.stride(), value.dtype)  # fmt: skip
        if isinstance(value, _PRIMITIVE):
            return value
        if isinstance(value, np.ndarray):
            return ("array", value.dtype.str, value.shape, value.tobytes())
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, tuple(state(v, depth + 1) for v in value))
        if isinstance(value, (set, frozenset)):
            return ("set", tuple(sorted(repr(state(v, depth + 1)) for v in value)))
        if isinstance(value, dict):
            return ("dict", tuple((repr(k), state(v, depth + 1)) for k, v in value.items()))
        if isinstance(value, (type, ModuleType, FunctionType, MethodType, BuiltinFunctionType)):
            return ("ref", id(value))
        if id(value) in seen or depth > 8:
            return ("seen", id(value))
        seen.add(id(value))
        attributes = getattr(value, "__dict__", None)
        if attributes is None:  # state this cannot read (slots, a C object)
            opaque.append(repr(type(value)))
            return ("opaque", id(value))
        return (type(value).__qualname__, id(value),
                tuple((k, state(v, depth + 1)) for k, v in attributes.items()))  # fmt: skip

    return state(pool, 0), tensors, not opaque


def clear() -> None:
    """Drop every idle pool (a test that builds its own SUT modules starts clean)."""
    CACHE.entries.clear()
    CACHE.held_bytes = 0
    CACHE.counts.clear()
    CACHE._expected = None
