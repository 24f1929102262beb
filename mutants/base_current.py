"""A correct SGLang 0.5.23 (`current`) module: KVWriteLoc(loc, swa_loc, full_loc, physical), cut
to len(loc) in __post_init__ (PR #29460), with the for_batch / for_layer constructors, all shared
from pools.write_loc (SGLang's API surface, pinned to the installed SGLang by
tests/test_write_loc_sglang.py). The doors are 0.5.14's with the 3-value unwrap; SWAKVPool reads
loc and swa_loc and, as 0.5.23's does, never full_loc."""

from __future__ import annotations

from mutants import base_bundled
from pools.write_loc import CurrentWriteLoc as KVWriteLoc
from pools.write_loc import unwrap_current as unwrap_write_loc

__all__ = ["KVWriteLoc", "MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool", "unwrap_write_loc"]


class MHATokenToKVPool(base_bundled.MHATokenToKVPool):
    unwrap = staticmethod(unwrap_write_loc)


class MLATokenToKVPool(base_bundled.MLATokenToKVPool):
    unwrap = staticmethod(unwrap_write_loc)


class SWAKVPool(base_bundled.SWAKVPool):
    unwrap = staticmethod(unwrap_write_loc)
    sub_pool_class = MHATokenToKVPool
