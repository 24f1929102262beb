"""Reused pools (harness/run/pool_cache.py): a pool lent again must judge as a fresh one. A stray
write on a reused pool is still the untouched oracle's finding, and the pool is rebuilt; a pool
that keeps state between runs is rebuilt; a snapshot still held is never overwritten."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from harness.compare.expectations import expected_writes
from harness.compare.oracles import self_check
from harness.plan.candidate import Candidate
from harness.run import pool_cache
from harness.run.execute import execute
from pools.builtin.sut import builtin_module
from scenarios.defaults import default_scenarios

ERA, ENGINE = "current", "reference"


@pytest.fixture(autouse=True)
def _clean_cache(monkeypatch):
    monkeypatch.setattr(pool_cache, "REUSE_MIN_BYTES", 0)  # the scenario's pool is small
    pool_cache.clear()
    yield
    pool_cache.clear()


def _scenario():
    return default_scenarios("mha", "bf16", 0)[0]


def _module_with(pool_class: type) -> SimpleNamespace:
    module = builtin_module(ERA, ENGINE)
    return SimpleNamespace(**{**vars(module), "MHATokenToKVPool": pool_class})


def _candidate(module) -> Candidate:
    return Candidate("builtin", module, ERA, ENGINE, "cpu", "plain", "extend")


def _findings(scenario, execution) -> list:
    assert execution.error is None, execution.error
    return self_check(scenario, execution, expected_writes(scenario))


def test_a_reused_pool_snapshots_the_bytes_a_fresh_one_does():
    scenario, candidate = _scenario(), _candidate(builtin_module(ERA, ENGINE))
    first = {name: rows.clone() for name, rows in execute(candidate, scenario).buffers.items()}
    second = execute(candidate, scenario)  # the first snapshot is gone: its pool is lent again
    assert pool_cache.CACHE.counts == {"built": 1, "reused": 1}
    assert first.keys() == second.buffers.keys()
    assert all(torch.equal(first[name], second.buffers[name]) for name in first)


def test_a_stray_write_on_a_reused_pool_is_the_untouched_oracles_finding():
    base = builtin_module(ERA, ENGINE).MHATokenToKVPool

    class Stray(base):
        plant = False

        def set_kv_buffer(self, *args, **kwargs):
            super().set_kv_buffer(*args, **kwargs)
            if type(self).plant:  # the last slot, which no token of the scenario writes
                self.k_buffer[0][-1].view(torch.uint8).fill_(0)

    scenario, candidate = _scenario(), _candidate(_module_with(Stray))
    assert _findings(scenario, execute(candidate, scenario)) == []
    Stray.plant = True
    planted = execute(candidate, scenario)
    assert pool_cache.CACHE.counts == {"built": 1, "reused": 1}  # the write landed on a reused pool
    findings = _findings(scenario, planted)
    last_slot = planted.buffers["L0.k"].shape[0] - 1
    assert [(f.oracle, f.message, f.buffer, f.slot) for f in findings] == [
        ("untouched", "a slot that no token writes was changed", "L0.k", last_slot)
    ]
    del planted  # its snapshot held the pool's storage
    Stray.plant = False
    clean = execute(candidate, scenario)
    assert pool_cache.CACHE.counts["rebuilt: a row outside the last run's writes changed"] == 1
    assert _findings(scenario, clean) == []


def test_a_pool_that_keeps_state_between_runs_is_rebuilt(monkeypatch):
    base = builtin_module(ERA, ENGINE).MHATokenToKVPool

    class Remembers(base):
        per_run = None  # the calls one run makes, counted on the first

        def set_kv_buffer(self, *args, **kwargs):
            self.calls = getattr(self, "calls", 0) + 1
            super().set_kv_buffer(*args, **kwargs)
            if type(self).per_run is not None and self.calls > type(self).per_run:
                self.k_buffer[0][-1].view(torch.uint8).fill_(0)  # a run it remembers

    scenario, candidate = _scenario(), _candidate(_module_with(Remembers))
    first = execute(candidate, scenario)
    Remembers.per_run = sum(1 for name in first.caller if name.endswith(".k"))
    del first
    for _ in range(2):
        assert _findings(scenario, execute(candidate, scenario)) == []
    assert pool_cache.CACHE.counts == {"built": 3, "rebuilt: its state changed": 2}
    # The plant matters: a cache blind to the pool's state would lend it again, and the
    # remembered run would write the last slot (the untouched oracle's finding).
    pool_cache.clear()
    monkeypatch.setattr(pool_cache, "fingerprint", lambda pool, buffers: ((), [], True))
    assert _findings(scenario, execute(candidate, scenario)) == []
    blind = _findings(scenario, execute(candidate, scenario))
    assert pool_cache.CACHE.counts == {"built": 1, "reused": 1}
    assert [(f.oracle, f.buffer) for f in blind] == [("untouched", "L0.k")]


def test_a_snapshot_still_held_keeps_its_bytes_and_the_pool_is_rebuilt():
    scenario, candidate = _scenario(), _candidate(builtin_module(ERA, ENGINE))
    held = execute(candidate, scenario)
    copy = {name: rows.clone() for name, rows in held.buffers.items()}
    execute(candidate, scenario)
    assert pool_cache.CACHE.counts["rebuilt: a snapshot still holds its buffers"] == 1
    assert all(torch.equal(copy[name], held.buffers[name]) for name in copy)


def test_a_foreign_module_builds_per_execution():
    module = SimpleNamespace(**{**vars(builtin_module(ERA, ENGINE)), "reuse_pools": False})
    scenario, candidate = _scenario(), _candidate(module)
    execute(candidate, scenario)
    execute(candidate, scenario)
    assert pool_cache.CACHE.counts == {}
    assert not pool_cache.CACHE.entries


def test_a_small_pool_is_built_per_execution(monkeypatch):
    monkeypatch.setattr(pool_cache, "REUSE_MIN_BYTES", 1 << 40)
    scenario, candidate = _scenario(), _candidate(builtin_module(ERA, ENGINE))
    execute(candidate, scenario)
    execute(candidate, scenario)
    assert pool_cache.CACHE.counts == {"built: small": 2}


def test_a_pool_sized_by_its_scenario_is_never_lent_to_one_that_needs_another_size():
    """A QSA pool's pending ring has a row per token of the largest forward: two scenarios of one
    geometry with different forwards are two pools (a decode's 8-row ring lent to a prefill was
    a false [shape] finding on every QSA decode cell)."""
    import dataclasses

    from harness.run.pool_cache import _key
    from pools.builtin.sut import builtin_module
    from scenarios.slots import qsa_request_slots
    from tests.conftest import scenario_named

    module = builtin_module("current", "torch")
    prefill = scenario_named("qsa", "bf16", "prefill")
    decode = dataclasses.replace(scenario_named("qsa", "bf16", "decode"), geometry=prefill.geometry)
    assert qsa_request_slots(prefill) != qsa_request_slots(decode)
    assert _key(module, prefill, "cpu") != _key(module, decode, "cpu")
    assert _key(module, prefill, "cpu") == _key(module, dataclasses.replace(prefill), "cpu")


def test_the_idle_pools_bytes_are_kept_as_they_come_and_go_and_the_oldest_dropped() -> None:
    cache = pool_cache.PoolCache()

    def lease(key: str, nbytes: int) -> pool_cache.Lease:
        return pool_cache.Lease(key, None, None, {}, (), [], nbytes)

    half = pool_cache.CACHE_BYTES // 2
    for key in ("a", "b", "c"):  # the third goes over the limit: the oldest is dropped
        cache.hold(lease(key, half))
    assert list(cache.entries) == ["b", "c"] and cache.held_bytes == 2 * half
    cache.hold(lease("c", 10))  # held again, smaller
    assert cache.held_bytes == half + 10
    assert cache.lend("b").nbytes == half and cache.held_bytes == 10
    assert cache.lend("b") is None and cache.held_bytes == 10
    cache.hold(lease("big", 4 * pool_cache.CACHE_BYTES))  # one over the limit alone stays
    assert list(cache.entries) == ["big"]
    assert cache.held_bytes == 4 * pool_cache.CACHE_BYTES
