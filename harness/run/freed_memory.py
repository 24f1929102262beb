"""Keep the memory of a freed pool in the process, so the next pool reuses it (issue 41).

glibc's malloc hands a large block back to the kernel when it is freed: one above the mmap
threshold is unmapped, and free memory at the top of the heap past the trim threshold is
trimmed. The next pool of that size then page-faults every page in again, and the kernel
zeroes each one before torch.zeros writes it once more. A pool is built for every new geometry,
so at `--profile nightly` (pools up to 40 MiB) that was a large part of a check's time.

Raising both thresholds keeps freed blocks in the heap for the next allocation. It is not
perfect: torch aligns its blocks, so a block freed right before is a few bytes short of the
next request of the same size, and some builds still extend the heap (tests/test_freed_memory.py
measures 1 to 7 of 10 rebuilds of a 40 MiB pool faulting, against all 10 without). Measured on
issue 41's cell at nightly (mha/bf16/plain, 200 examples, --seed 0): 810,399 page faults and
11.9 s before, 378,558 and 11.0 s after. The price is resident memory: free heap up to
TRIM_BYTES stays in the process, and that run's peak grew from 1.53 to 1.63 GB.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt's parameter numbers (glibc malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# Blocks up to this size come from the heap: above a nightly pool (40 MiB) and a reach pool.
MMAP_BYTES = 256 << 20
# glibc releases refuse an mmap threshold above 32 MiB (HEAP_MAX_SIZE / 2); then that is used.
MMAP_BYTES_OLDER_GLIBC = 32 << 20
TRIM_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Set malloc's thresholds for this process; False where its C library has no mallopt (not
    glibc: macOS, musl), which leaves allocation as it was."""
    path = ctypes.util.find_library("c")
    try:
        mallopt = getattr(ctypes.CDLL(path), "mallopt", None)
    except OSError:
        return False
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mmap_set = mallopt(M_MMAP_THRESHOLD, MMAP_BYTES) or mallopt(
        M_MMAP_THRESHOLD, MMAP_BYTES_OLDER_GLIBC
    )
    return bool(mmap_set) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_BYTES))
