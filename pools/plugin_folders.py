"""Modules kept outside this tree, found in folders an environment variable names: a backend's
(KVH_BACKEND_PATHS, backends/registry.py) or a pool kind's record, builtin pool and judge
(KVH_KIND_PATHS, pools/kinds/registry.py), a test's synthetic ones among them.

Each top-level `.py` file of a folder is imported under a prefix, so that its name cannot shadow
an installed package (a folder's `triton.py` is not `triton`), in name order.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Mapping


def folders_named(variable: str, environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The folders `environ` names in `variable` (separated by os.pathsep), in the order given."""
    return tuple(Path(folder) for folder in environ.get(variable, "").split(os.pathsep) if folder)


def _import_file(path: Path, variable: str, prefix: str) -> ModuleType:
    name = prefix + path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "")).resolve() != path.resolve():
            raise ValueError(
                f"{variable}: two modules named {path.stem!r} ({loaded.__file__} and {path})"
            )
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{variable}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def folder_modules(folder: Path, variable: str, prefix: str) -> list[ModuleType]:
    """Every top-level module of `folder`, imported under `prefix`, in name order."""
    if not folder.is_dir():
        raise ValueError(f"{variable}: {folder} is not a folder")
    return [
        _import_file(folder / f"{info.name}.py", variable, prefix)
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name)
        if not info.ispkg
    ]
