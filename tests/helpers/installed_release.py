"""The installed SGLang release as the loader offers it, for the tests that pin the judge against
the release's own pools: a skip, with its reason as data, where it did not load or lacks a pool."""

from __future__ import annotations

from typing import Any

import pytest

from harness.sut.load.sglang_loader import SutLoadError, load_sglang


def release_offering(*names: str) -> Any:
    """The loader's namespace of the installed release, where it offers every one of `names`."""
    try:
        sglang = load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")
    missing = [name for name in names if not hasattr(sglang, name)]
    if missing:
        pytest.skip(f"the installed release's loader offers no {', '.join(missing)}")
    return sglang
