"""The one name of a check's subject, `sut/era/engine/backend:mode[@device]`: what the run's lines,
its repro files, its skip lines and the summary built from stored rows all call a candidate, a
skip and an era-table row, so that a summary read back from the store names them as the run did."""

from __future__ import annotations


def check_label(sut: str, era: str, engine: str, backend: str, mode: str, device: str = "") -> str:
    """`sut/era/engine/backend:mode`, and `@device` when there is one (a skip has none)."""
    label = f"{sut}/{era}/{engine}/{backend}:{mode}"
    return f"{label}@{device}" if device else label
