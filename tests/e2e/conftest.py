"""Everything under tests/e2e/ runs `kvh` (or a script, or a fresh pytest) in a subprocess, as a
user would: marked `e2e` here, so `pytest -m "not e2e"` is the unit suite."""

from __future__ import annotations

from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A conftest hook sees the whole session's items, not only this folder's.
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
