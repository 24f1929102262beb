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

from harness.sut.errors import SutLoadError
from harness.sut.loader import LoadedSut

RELEASE = re.compile(r"^sglang==(\d+(?:\.\d+)+(?:\.?post\d+)?)$")
MARKER = "kvh-sut.json"

# Installed with --no-deps into the release's own folder, in front of this environment's
# packages. 0.5.12-0.5.14 register configs that transformers 5.19 already ships ("'qwen3_asr' is
# already used"), so they need the transformers they were built against, and its hub/http stack.
_OLD_TRANSFORMERS_STACK = [
    "huggingface-hub==1.33.0",
    "httpx==0.28.1",
    "httpcore<2",
    "tokenizers==0.22.2",
]
RELEASE_EXTRAS: dict[str, list[str]] = {
    "0.5.12": ["transformers==5.6.0", *_OLD_TRANSFORMERS_STACK],
    "0.5.13": ["transformers==5.8.1", *_OLD_TRANSFORMERS_STACK],
    "0.5.14": ["transformers==5.8.1", *_OLD_TRANSFORMERS_STACK],
}


def cache_root() -> Path:
    return Path(os.environ.get("KVH_CACHE", Path.home() / ".cache" / "kvh")) / "suts"


def is_isolated_spec(spec: str) -> bool:
    return bool(RELEASE.match(spec)) or spec.startswith("sglang@")


def target_dir(spec: str) -> Path:
    match = RELEASE.match(spec)
    if match:
        return cache_root() / f"sglang-{match.group(1)}"
    return Path(spec.split("@", 1)[1])


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
    return LoadedSut(spec, worker, era, version=version)


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
    extras = RELEASE_EXTRAS.get(match.group(1), [])
    subprocess.run([*pip, "--no-deps", "--target", str(staging), spec, *extras], check=True)
    (staging / MARKER).write_text(json.dumps({"spec": spec}) + "\n")
    staging.replace(folder)  # a half-finished install never looks installed
    return folder, True
