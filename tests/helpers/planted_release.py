"""A copy of the installed SGLang release with one source file changed: the planted-fault tests'
release (`kvh run --sut sglang@DIR`), never an edit of the installed files."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest


def installed_sglang() -> Path:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("sglang is not installed (requirements/sglang-cpu.txt, README)")
    return Path(list(spec.submodule_search_locations)[0])


def copy_release(folder: Path) -> Path:
    """A copy of the installed release under `folder`, by hard links: the files are only read."""
    copy = folder / "sglang"
    shutil.copytree(
        installed_sglang(), copy, copy_function=os.link, ignore=shutil.ignore_patterns("*.pyc")
    )
    return copy


def replace_file(copy: Path, relative: Path, text: str) -> None:
    """Give the copy's `relative` file new text: a new file, so the hard link to the installed
    one is left untouched."""
    (copy / relative).unlink()
    (copy / relative).write_text(text)
