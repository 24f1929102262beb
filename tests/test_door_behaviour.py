"""Capabilities decided by running a door on a tiny pool (harness/sut/probe/door_behaviour.py):
a door that takes a KVWriteLoc apart under a name without "unwrap" still unwraps, one that
indexes with the KVWriteLoc itself does not, and a door that cannot write a bare loc here is
read from its source, with the reason listed."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Optional

import pytest
import torch

from harness.sut.probe.capabilities import SOURCE_ONLY, probe
from harness.sut.probe.door_behaviour import DoorDoesNotRun, door_takes_write_loc, mla_unwraps


@dataclass
class WriteLoc:
    loc: torch.Tensor
    swa_loc: Optional[torch.Tensor] = None

    @classmethod
    def of(cls, loc_info: Any) -> "WriteLoc":
        return loc_info if isinstance(loc_info, cls) else cls(loc_info)

    def split(self) -> tuple:
        return self.loc, self.swa_loc


class SplittingPool:
    """An MLA pool whose doors take the loc apart with a classmethod and a method."""

    def __init__(self, **_: Any):
        self.rows = torch.zeros(8, 1, 8, dtype=torch.bfloat16)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.rows

    def set_kv_buffer(self, layer: Any, loc_info: Any, cache_k: Any, cache_v: Any) -> None:
        loc, _ = WriteLoc.of(loc_info).split()
        self.rows[loc] = cache_k

    def set_mla_kv_buffer(self, layer: Any, loc_info: Any, nope: Any, rope: Any) -> None:
        self.set_kv_buffer(layer, loc_info, torch.cat([nope, rope], dim=-1), None)


class IndexingPool(SplittingPool):
    """An MLA pool whose doors index with what they are handed (SGLang 0.5.14's MLA doors)."""

    def set_kv_buffer(self, layer: Any, loc_info: Any, cache_k: Any, cache_v: Any) -> None:
        self.rows[loc_info] = cache_k


class KernelOnlyPool(SplittingPool):
    """A door that cannot write here at all: its kernel needs a GPU."""

    def set_kv_buffer(self, layer: Any, loc_info: Any, cache_k: Any, cache_v: Any) -> None:
        raise RuntimeError("no CUDA device")


def _release(pool: type) -> SimpleNamespace:
    return SimpleNamespace(MLATokenToKVPool=pool, KVWriteLoc=WriteLoc)


@pytest.mark.parametrize(
    "pool, unwraps", [(SplittingPool, True), (IndexingPool, False)], ids=["renamed", "indexes"]
)
def test_the_mla_doors_unwrap_by_what_they_write_not_by_a_word(pool, unwraps):
    read_source: list[str] = []
    assert mla_unwraps(_release(pool), read_source) is unwraps
    assert read_source == []  # decided by running, not by reading


def test_a_door_that_does_not_run_here_is_read_from_its_source_and_says_so():
    read_source: list[str] = []
    with pytest.raises(DoorDoesNotRun, match="no CUDA device"):
        door_takes_write_loc(
            KernelOnlyPool, lambda pool, loc: pool.set_kv_buffer(0, loc, 0, 0), WriteLoc
        )
    # Its source names no unwrap helper, so the reading says no, and the reason is listed.
    assert mla_unwraps(_release(KernelOnlyPool), read_source) is False
    assert read_source and "no CUDA device" in read_source[0]


def test_each_capability_read_from_source_is_listed_with_its_reason():
    """The planted release, probed whole: what was read from source says why."""
    caps = probe(_release(KernelOnlyPool))
    listed = dict(caps.from_source)
    assert "no CUDA device" in listed["mla_unwraps_write_loc"]
    assert set(SOURCE_ONLY) - set(listed) == {
        name for name in SOURCE_ONLY if getattr(caps, name) is None
    }


@pytest.mark.sglang
def test_a_unified_pool_s_design_is_decided_by_running_it():
    """The installed release's unified MHA pool refuses a loc no plan marked and writes the one
    its own plan marked; a planted pool that writes both is not the design the kind models."""
    import dataclasses
    import importlib

    from backends.sglang_names import release_plan_binder
    from harness.sut.load.optional_pool_records import OPTIONAL_POOLS
    from harness.sut.load.sglang_loader import SutLoadError, load_sglang
    from harness.sut.probe.door_behaviour import refuses_unmarked

    try:
        load_sglang()  # its stand-ins first: the plan's module imports GPU-only names
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")
    bind = release_plan_binder()
    if bind is None:
        pytest.skip("the installed sglang has no write-loc plan (before 0.5.22)")
    (unified,) = [p for p in OPTIONAL_POOLS if p.name == "UnifiedMHATokenToKVPool"]
    module = importlib.import_module(unified.module)

    def make(pool: Any) -> Any:
        return lambda: pool.build(module)(**pool.trial)

    assert refuses_unmarked(make(unified), module.KVWriteLoc, bind, unified.refusal_row) is True

    class Accepting:
        def __init__(self, **_: Any):
            self.rows = torch.zeros(8, 1, 16, dtype=torch.bfloat16)

        def set_kv_buffer(self, layer: Any, loc_info: Any, k: Any, v: Any) -> None:
            self.rows[getattr(loc_info, "loc", loc_info)] = k

    planted = dataclasses.replace(unified, build=lambda module: Accepting)
    assert refuses_unmarked(make(planted), module.KVWriteLoc, bind, planted.refusal_row) is False
