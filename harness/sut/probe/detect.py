"""Era detection from what a module offers (harness/sut/probe/capabilities.py), never from a
version."""

from __future__ import annotations

from typing import Any

from harness.sut.probe.capabilities import Capabilities, era_of, probe

REQUIRED_NAMES = ("MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool")


def missing_names(module: Any) -> list[str]:
    return [name for name in REQUIRED_NAMES if not hasattr(module, name)]


def detect(module: Any) -> tuple[str | None, Capabilities, str]:
    """(era, capabilities, why no era fits): the era is None when the probed capabilities fit
    no modelled call convention, and the third value then says what is missing."""
    capabilities = probe(module)
    era, missing = era_of(capabilities)
    return era, capabilities, "; ".join(missing)
