"""Where isolated SUTs live: `pip install --target` folders layered on this environment's torch.

`sglang==X` names the release installed by `kvh sut install sglang==X` into the cache
($KVH_CACHE, default ~/.cache/kvh/suts); `sglang@DIR` names any such folder. A second install of
the same release is a no-op, so CI can cache the folder.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from packaging.requirements import Requirement

from harness.sut.capabilities import Capabilities
from harness.sut.errors import SutLoadError
from harness.sut.loader import LoadedSut
from harness.sut.release_deps import needed

RELEASE = re.compile(r"^sglang==(\d+(?:\.\d+)+(?:\.?post\d+)?)$")
MARKER = "kvh-sut.json"

# Rounds of following requirements into a release folder (harness/sut/release_deps.py): the
# release's pins, their requirements, and theirs; a longer chain is reported, not chased.
DEPENDENCY_ROUNDS = 4


def cache_root() -> Path:
    return Path(os.environ.get("KVH_CACHE", Path.home() / ".cache" / "kvh")) / "suts"


def is_isolated_spec(spec: str) -> bool:
    return bool(RELEASE.match(spec)) or spec.startswith("sglang@")


def target_dir(spec: str) -> Path:
    match = RELEASE.match(spec)
    if match:
        return cache_root() / f"sglang-{match.group(1)}"
    return Path(spec.split("@", 1)[1])


def installed_metadata(spec: str) -> dict:
    """What `install` recorded about a release folder (its own dependencies), or {}."""
    folder = installed(spec)
    if folder is None or not (folder / MARKER).is_file():
        return {}
    return json.loads((folder / MARKER).read_text())


def installed(spec: str) -> Optional[Path]:
    folder = target_dir(spec)
    if spec.startswith("sglang@"):
        return folder if (folder / "sglang").is_dir() else None
    return folder if (folder / MARKER).is_file() else None


# Modules of requirements/sglang-cpu.txt that the workers import from this environment; a
# release folder alone is not enough (a fresh venv next to an old cache, say).
SHARED_MODULES = (
    "pydantic",
    "transformers",
    "compressed_tensors",
    "orjson",
    "msgspec",
    "gguf",
    "dill",
    "psutil",
    "pybase64",
    "starlette",
    "PIL",
    "tqdm",
    "requests",
)


def missing_shared_modules() -> list[str]:
    return [name for name in SHARED_MODULES if importlib.util.find_spec(name) is None]


def not_ready_reason(spec: str) -> Optional[str]:
    """Why `spec` cannot run here (None when it can), with the command that fixes it."""
    hint = (
        f"kvh sut install {spec}"
        if RELEASE.match(spec)
        else "pip install -r requirements/sglang-cpu.txt"
    )
    if installed(spec) is None:
        return f"SUT {spec} is not installed ({target_dir(spec)}); run: {hint}"
    missing = missing_shared_modules()
    if missing:
        return (
            f"SUT {spec}: the shared dependency set is missing here ({', '.join(missing)}); "
            f"run: {hint}"
        )
    return None


def load_isolated(spec: str) -> LoadedSut:
    """Start the worker of an installed isolated SUT and ask it for its era and version."""
    from harness.sut.client import IsolatedSut

    reason = not_ready_reason(spec)
    if reason:
        raise SutLoadError(reason)
    folder = installed(spec)
    worker = IsolatedSut("sglang", prefix=str(folder))
    era, version = worker.hello_or_error()
    capabilities = worker.loaded.get("capabilities")
    return LoadedSut(
        spec,
        worker,
        era,
        version=version,
        capabilities=Capabilities.from_dict(capabilities) if capabilities else None,
        unfit=worker.loaded.get("unfit", ""),
        root=worker.loaded.get("root"),
        real_code=tuple(worker.loaded.get("real_code", ())),
        real_code_missing=tuple(map(tuple, worker.loaded.get("real_code_missing", ()))),
    )


def install(spec: str, requirements: Path, quiet: bool = True) -> tuple[Path, bool]:
    """Install the release with --no-deps into its cache folder and the shared CPU dependency set
    into this environment. Returns (folder, whether anything was installed)."""
    match = RELEASE.match(spec)
    if not match:
        raise ValueError(f"cannot install {spec!r}: expected sglang==VERSION")
    folder = target_dir(spec)
    if installed(spec) and not missing_shared_modules():
        return folder, False
    flags = ["-q"] if quiet else []
    pip = [sys.executable, "-m", "pip", "install", *flags]
    subprocess.run([*pip, "-r", str(requirements)], check=True)
    if installed(spec):
        return folder, True
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run([*pip, "--no-deps", "--target", str(staging), spec], check=True)
    added = _own_dependencies(staging, pip)
    check_import(staging)
    (staging / MARKER).write_text(json.dumps({"spec": spec, "own_dependencies": added}) + "\n")
    staging.replace(folder)  # a half-finished install never looks installed
    return folder, True


def _own_dependencies(staging: Path, pip: list[str]) -> list[str]:
    """Install into `staging` what the release needs at other versions than this environment
    has (its metadata says which); returns the requirements installed."""
    added: list[str] = []
    names, release = ["sglang"], True
    for _ in range(DEPENDENCY_ROUNDS):
        wanted = needed(staging, names, release=release)
        if not wanted:
            return added
        subprocess.run([*pip, "--no-deps", "--target", str(staging), *wanted], check=True)
        added += wanted
        names, release = [Requirement(text).name for text in wanted], False
    unmet = needed(staging, names)
    if unmet:
        raise SutLoadError(
            f"{staging}: still unmet after {DEPENDENCY_ROUNDS} rounds: {', '.join(unmet)}"
        )
    return added


def check_import(folder: Path) -> None:
    """Import the release in a worker, as a run will: a folder that cannot import is never
    called installed. SutLoadError carries the worker's import chain."""
    from harness.sut.client import IsolatedSut

    with IsolatedSut("sglang", prefix=str(folder)) as worker:
        worker.hello_or_error()
