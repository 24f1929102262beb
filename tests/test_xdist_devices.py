"""xdist workers pin distinct devices (tests/helpers/xdist_devices.py, the suite's own plugin)."""

from __future__ import annotations

import pytest

from tests.helpers.xdist_devices import worker_device, worker_index


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
