"""Split torch's intra-op threads between pytest-xdist workers, as `kvh run --jobs` splits them
between its children (harness/cli/jobs.py).

Two workers of two threads each on two cores oversubscribe the machine, and OpenMP's spinning
threads then wait on each other: two default `kvh run`s side by side took 154 s each with
torch's default threads and 41-43 s with one each (the same run alone: 31-36 s either way). So
each worker, and every `kvh` it starts, gets its share of the cores. A user's OMP_NUM_THREADS
wins; outside xdist nothing changes.
"""

from __future__ import annotations

import os
from typing import Mapping, MutableMapping, Optional

from harness.cli.jobs import threads_per_job


def worker_threads(environ: Mapping[str, str], cpu_count: Optional[int]) -> Optional[int]:
    """This worker's share of the cores, or None: not an xdist worker, or threads already chosen."""
    workers = environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or "OMP_NUM_THREADS" in environ:
        return None
    return threads_per_job(int(workers), cpu_count)


def share_threads(environ: MutableMapping[str, str]) -> Optional[int]:
    """Set this worker's threads, for torch here and for the processes it starts."""
    threads = worker_threads(environ, os.cpu_count())
    if threads is not None:
        import torch

        environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)
    return threads
