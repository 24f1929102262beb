"""A freed pool's memory serves the next pool (harness/run/freed_memory.py): counted in page
faults, not time. Each case runs in a process of its own, as malloc's thresholds are the
process's."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from harness.run.freed_memory import keep_freed_memory

# A 40 MiB pool (a nightly pool's size) built and freed, then built and freed ten times more:
# the minor page faults of those ten builds.
REBUILD_FAULTS = """
import resource, sys, torch
from harness.run.freed_memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
pool = torch.zeros(40 << 20, dtype=torch.uint8)
del pool
before = faults()
for _ in range(10):
    pool = torch.zeros(40 << 20, dtype=torch.uint8)
    del pool
print(faults() - before)
"""
PAGES = (40 << 20) // 4096


def _rebuild_faults(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", REBUILD_FAULTS, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(done.stdout.strip())


def test_it_applies_where_the_c_library_is_glibc():
    assert keep_freed_memory() is (platform.libc_ver()[0] == "glibc")


def test_pools_built_again_fault_fewer_pages_in():
    library = platform.libc_ver()[0]
    if library != "glibc":
        pytest.skip(f"malloc's thresholds are glibc's; this C library is {library or 'unknown'}")
    # Without the thresholds every build faults in (and the kernel zeroes) all 10,240 pages
    # again. With them a build reuses a freed block where one fits; torch aligns its blocks, so
    # a block freed right before is a few bytes short of the next request and some builds still
    # extend the heap: measured 1 to 7 builds of the 10 (10,240 to 71,680 faults).
    # Transparent huge pages, where the kernel gives them, make a build's faults 20, not 10,240.
    plain = _rebuild_faults("plain")
    assert plain >= 10 * (PAGES // 512)
    assert _rebuild_faults("keep") <= 0.8 * plain
