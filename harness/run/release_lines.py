"""Which lines of a release a run's checks execute (`kvh run --coverage`): coverage.py in the SUT's
worker, on from the release's load to the worker's end, over the whole `sglang` package (the
summary keeps to the write path's packages; the mutation campaign reads every file it mutates,
harness/run/release_mutation.py). Each worker (a restarted one too)
writes a data file of its own into the run's folder, and beside it the boolean globals each
measured module set when it was imported here (`_is_cuda` and the like): what decides that a
branch cannot run on this machine (harness/report/release_lines.py reads both). A worker killed
(a hang past its grace) loses what it measured."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from harness.report.release_lines import DATA_FILE, FLAGS_PREFIX

RELEASE_PACKAGE = "sglang."
T = TypeVar("T")


class LineMeter:
    """coverage.py over the sglang package the worker imports (under `prefix`,
    else the installed one), writing into `folder`. The worker starts it once the release has
    loaded, so what the loader's own trials and probes run is not counted."""

    def __init__(self, folder: Path, prefix: Optional[str]):
        import coverage

        # pybind11 modules do not import under a tracer (torch._C: SystemError "bad call
        # flags"; triton._C.libtriton's submodules: ModuleNotFoundError): a write that imports
        # one lazily must find it imported already.
        import torch  # noqa: F401

        with suppress(ImportError):  # a machine without triton has none to import late either
            # The interpreter switch first, as the loader imports it: triton.language's own
            # kernels decorated compiled make a release kernel interpreted later raise
            # "Cannot call @triton.jit'd outside of the scope of a kernel".
            import pools.builtin.engines.triton_mode  # noqa: F401,I001
            import triton.compiler  # noqa: F401

        self.folder, self.started = folder, False
        # As directories: coverage.py leaves a package it finds in site-packages out as
        # third-party.
        package = _package(prefix)
        self._measure = coverage.Coverage(
            data_file=str(folder / DATA_FILE),
            data_suffix=True,
            source=[str(package)],
            config_file=False,
        )

    def start(self) -> None:
        self._measure.start()
        self.started = True

    def save(self) -> None:
        """Its data, and the flags that decide which branches cannot run here, into its folder
        (the worker does it on its way out; a worker whose SUT did not load has none)."""
        if not self.started:
            return
        self._measure.stop()
        # Made again here: the run empties its folder as it starts, which may be after this
        # worker (started early, beside the run's own imports) made it.
        self.folder.mkdir(parents=True, exist_ok=True)
        self._measure.save()
        flags = self.folder / f"{FLAGS_PREFIX}{os.getpid()}.json"
        flags.write_text(json.dumps(machine_flags()))


def unmeasured(write: Callable[..., T]) -> Callable[..., T]:
    """`write` with coverage.py paused, where it measures this process: a forward told not to
    save calls no write door and goes on to its attention, which is not the write path whose
    lines a run reports (nor a mutation campaign's scope)."""

    def paused(*args: Any, **kwargs: Any) -> T:
        measure = _current_measure()
        if measure is None:
            return write(*args, **kwargs)
        measure.stop()
        try:
            return write(*args, **kwargs)
        finally:
            measure.start()

    return paused


def _current_measure() -> Optional[Any]:
    coverage = sys.modules.get("coverage")  # imported only where a LineMeter runs
    return None if coverage is None else coverage.Coverage.current()


def _package(prefix: Optional[str]) -> Path:
    """The sglang package the worker imports: under its prefix, else where Python finds it."""
    if prefix:
        return Path(prefix) / "sglang"
    found = importlib.util.find_spec("sglang")
    if found is None or found.origin is None:
        raise ModuleNotFoundError("--coverage: no sglang package to measure")
    return Path(found.origin).parent


def machine_flags() -> dict[str, dict[str, bool]]:
    """Each imported release module's private boolean globals, by its file: how this machine set
    them at import (a branch under one that is False here cannot run here)."""
    flags: dict[str, dict[str, bool]] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not name.startswith(RELEASE_PACKAGE) or not path:
            continue
        values = {
            key: value
            for key, value in vars(module).items()
            if key.startswith("_") and not key.startswith("__") and isinstance(value, bool)
        }
        if values:
            flags[os.path.realpath(path)] = values
    return flags
