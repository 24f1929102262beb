"""xdist workers pin distinct devices and share the cores (tests/helpers/xdist_devices.py and
xdist_threads.py, the suite's own plugin)."""

from __future__ import annotations

import pytest

from tests.helpers.xdist_devices import worker_device, worker_index
from tests.helpers.xdist_threads import worker_threads


@pytest.mark.parametrize(
    "worker, count, device",
    [
        ("gw0", 2, "cuda:0"),
        ("gw1", 2, "cuda:1"),
        ("gw3", 2, "cuda:1"),
        ("gw5", 4, "cuda:1"),
        ("gw2", 1, None),
        ("master", 4, None),
        ("", 4, None),
    ],
)
def test_xdist_workers_pin_distinct_devices(worker, count, device):
    environ = {"PYTEST_XDIST_WORKER": worker} if worker else {}
    assert worker_device("cuda", count, environ) == device
    assert worker_index(environ) == (int(worker[2:]) if worker.startswith("gw") else None)


@pytest.mark.parametrize(
    "environ, cpus, threads",
    [
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, 2, 1),
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, 16, 8),
        ({"PYTEST_XDIST_WORKER_COUNT": "4"}, 2, 1),  # never none
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, None, 1),
        ({"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "3"}, 16, None),  # the user's
        ({}, 16, None),  # not under xdist
    ],
)
def test_xdist_workers_share_the_cores(environ, cpus, threads):
    assert worker_threads(environ, cpus) == threads


def test_this_worker_and_what_it_starts_use_its_share():
    import os

    import torch

    if "PYTEST_XDIST_WORKER_COUNT" not in os.environ:
        pytest.skip("not an xdist worker (run with -n)")
    assert torch.get_num_threads() == int(os.environ["OMP_NUM_THREADS"])
