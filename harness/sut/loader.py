"""Turn a `--sut` spec into SGLang-like modules: builtin pools, the installed sglang, or a user's.

A user's module is anything with SGLang's names and signatures (see README, "Test your own
pool"); its era is detected from what it offers.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.sut.detect import detect_era, missing_names
from harness.sut.errors import SutLoadError


@dataclass(frozen=True)
class LoadedSut:
    spec: str
    module: Any
    era: str
    engine: str = "-"
    version: str = ""


def parse_builtin(spec: str) -> Optional[str]:
    """'builtin' -> '' (all engines), 'builtin:torch' -> 'torch', anything else -> None."""
    if spec == "builtin":
        return ""
    if spec.startswith("builtin:"):
        return spec.split(":", 1)[1]
    return None


def _import_file(path: Path) -> Any:
    name = f"kvh_sut_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SutLoadError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_foreign(spec: str) -> LoadedSut:
    """Load `sglang`, a .py file or a dotted module, and detect its era."""
    try:
        if spec == "sglang":
            from harness.sut.sglang_loader import load_sglang

            module = load_sglang()
        elif spec.endswith(".py") or Path(spec).exists():
            path = Path(spec)
            if not path.is_file():
                raise SutLoadError(f"SUT file {spec} does not exist")
            module = _import_file(path)
        else:
            module = importlib.import_module(spec)
    except SutLoadError:
        raise
    except Exception as error:  # any import-time failure of user code is a usage error
        raise SutLoadError(
            f"SUT {spec!r} failed to import: {type(error).__name__}: {error}"
        ) from None
    missing = missing_names(module)
    if missing:
        raise SutLoadError(
            f"SUT {spec!r} lacks {', '.join(missing)} (see README: Test your own pool)"
        )
    try:
        era = detect_era(module)
    except (TypeError, ValueError) as error:
        raise SutLoadError(f"SUT {spec!r}: cannot detect its era: {error}") from None
    return LoadedSut(spec, module, era, version=str(getattr(module, "version", "")))
