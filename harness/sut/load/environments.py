"""Where isolated SUTs live: `pip install --target` folders layered on this environment's torch.

`sglang==X` names the release installed by `kvh sut install sglang==X` into the cache
($KVH_CACHE, default ~/.cache/kvh/suts), or a fork installed as `kvh sut install X=REQUIREMENT`
(a wheel, a URL, `git+...`: anything pip takes that installs the `sglang` package);
`sglang@DIR` names any folder that holds an `sglang` package, and `sglang@git:PATH#REV` a commit of
a local SGLang checkout (harness/sut/load/git_commits.py). A second install of
the same release is a no-op, so CI can cache the folder; one that starts while the first is
installing waits for it (a lock per release, harness/sut/load/install_lock.py), then reuses it.
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
from typing import TYPE_CHECKING, Optional

from packaging.requirements import Requirement

from harness.sut.load import git_commits, install_lock
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.loader import LoadedSut, parse_builtin, unfound
from harness.sut.load.release_deps import needed, providers, requirement_for_module

if TYPE_CHECKING:
    from harness.sut.worker.client import IsolatedSut

RELEASE = re.compile(r"^sglang==([A-Za-z0-9][A-Za-z0-9._+-]*)$")
FORK = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._+-]*)=(?!=)(.+)$")  # NAME=REQUIREMENT
MARKER = "kvh-sut.json"
# The CPU dependency set every release shares (pip-installed into this environment first).
SHARED_REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements" / "sglang-cpu.txt"

# Rounds of following requirements into a release folder (harness/sut/load/release_deps.py): the
# release's pins, their requirements, and theirs; a longer chain is reported, not chased.
DEPENDENCY_ROUNDS = 4
# Imports tried while the release's import chain names a requirement it still lacks.
IMPORT_ROUNDS = 6


def cache_root() -> Path:
    return Path(os.environ.get("KVH_CACHE", Path.home() / ".cache" / "kvh")) / "suts"


def is_isolated_spec(spec: str) -> bool:
    return bool(RELEASE.match(spec)) or spec.startswith("sglang@")


def target_dir(spec: str) -> Path:
    match = RELEASE.match(spec)
    if match:
        return cache_root() / f"sglang-{match.group(1)}"
    if git_commits.is_git_spec(spec):
        return git_commits.cached_folder(spec) or git_commits.commit_cache()
    return Path(spec.split("@", 1)[1])


def installed_metadata(spec: str) -> dict:
    """What `install` recorded about a release folder (its own dependencies), or {}."""
    folder = installed(spec)
    if folder is None or not (folder / MARKER).is_file():
        return {}
    return json.loads((folder / MARKER).read_text())


def installed(spec: str) -> Optional[Path]:
    if git_commits.is_git_spec(spec):
        return git_commits.cached_folder(spec)
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
    folder = target_dir(spec)
    if installed(spec) is None:
        if RELEASE.match(spec):
            return f"SUT {spec} is not installed ({folder}); run: kvh sut install {spec}"
        if git_commits.is_git_spec(spec):
            return f"SUT {spec}: the commit is not checked out under {folder}"
        what = "does not exist" if not folder.exists() else "holds no sglang/ package"
        return (
            f"SUT {spec}: {folder} {what}; give a folder that holds sglang/ (e.g. "
            f"pip install --no-deps --target {folder} <sglang wheel, URL or path>)"
        )
    missing = missing_shared_modules()
    if missing:
        return (
            f"SUT {spec}: the shared dependency set is missing here ({', '.join(missing)}); "
            "run: pip install -r requirements/sglang-cpu.txt"
        )
    return None


def checked_out(spec: str) -> str:
    """`spec`; for a commit (`sglang@git:`), its canonical spec once its package is checked out in
    the cache. GitSpecError (a ValueError) where the checkout or revision names no package."""
    return git_commits.materialise(spec) if git_commits.is_git_spec(spec) else spec


def load_isolated(
    spec: str, coverage: Optional[Path] = None, kinds: Optional[list[str]] = None
) -> LoadedSut:
    """Start the worker of an installed isolated SUT and ask it for its era and version
    (`coverage`: the folder it measures its write path's lines into; `kinds`: the pool kinds the
    run plans, None for every kind)."""
    from harness.sut.worker.client import IsolatedSut

    spec = checked_out(spec)
    reason = not_ready_reason(spec)
    if reason:
        raise SutLoadError(reason)
    folder = installed(spec)
    worker = IsolatedSut("sglang", prefix=str(folder), coverage=_folder(coverage), kinds=kinds)
    worker.hello_or_error()
    return LoadedSut.from_dict({**worker.described, "spec": spec}, worker)


def load_isolated_here(spec: str, kinds: Optional[list[str]] = None) -> LoadedSut:
    """An installed isolated SUT loaded in this process (`kvh run --in-process`: for a debugger,
    or in a disposable judge forked for one copy of a release, harness/run/forked_judges.py).
    Its folder goes first on sys.path; the loader refuses when this process already holds
    another sglang."""
    from dataclasses import replace

    from harness.sut.load.loader import load_foreign

    spec = checked_out(spec)
    reason = not_ready_reason(spec)
    if reason:
        raise SutLoadError(reason)
    return replace(load_foreign("sglang", str(installed(spec)), kinds), spec=spec)


def user_worker(
    spec: str, coverage: Optional[Path] = None, kinds: Optional[list[str]] = None
) -> IsolatedSut:
    """The worker, not yet started, of a user's module or `.py` file (a file by its absolute
    path: the worker runs from the repository); this process's folder is on its import path, so
    a dotted module resolves as it would here. A SUT that cannot be found is a SutLoadError."""
    from harness.sut.worker.client import IsolatedSut

    reason = unfound(spec)
    if reason:
        raise SutLoadError(reason)
    path = Path(spec)
    return IsolatedSut(
        str(path.resolve()) if path.is_file() else spec,
        import_paths=(os.getcwd(),),
        coverage=_folder(coverage),
        kinds=kinds,
    )


def _folder(coverage: Optional[Path]) -> Optional[str]:
    return None if coverage is None else str(coverage.resolve())


def start_user_workers(
    specs: list[str], coverage: Optional[Path] = None, kinds: Optional[list[str]] = None
) -> dict[str, IsolatedSut]:
    """Start the worker of each user's module or file among `specs` now, without waiting for it:
    `kvh run` does so before its own imports, so both processes import torch at once."""
    workers = {}
    for spec in specs:
        if parse_builtin(spec) is not None or is_isolated_spec(spec):
            continue
        try:
            worker = user_worker(spec, coverage, kinds)
        except SutLoadError:  # not found: the run says so when it loads it
            continue
        worker.spawn()
        workers[spec] = worker
    return workers


def load_in_worker(
    spec: str,
    worker: Optional[IsolatedSut] = None,
    coverage: Optional[Path] = None,
    kinds: Optional[list[str]] = None,
) -> LoadedSut:
    """A user's module or `.py` file loaded in its worker (`worker`, if already started), and
    what the worker says it loaded."""
    worker = worker or user_worker(spec, coverage, kinds)
    worker.hello_or_error()
    return LoadedSut.from_dict({**worker.described, "spec": spec}, worker)


def ensure_installed(spec: str) -> str:
    """Why `spec` cannot be loaded here after installing it where it is an isolated release that
    is not (as `kvh sut install` does); "" when it can. For the verbs that install what they
    try (a range of --sut releases, kvh bisect)."""
    if git_commits.is_git_spec(spec):
        try:
            spec = checked_out(spec)
        except git_commits.GitSpecError as error:
            return str(error)
    reason = not_ready_reason(spec) if is_isolated_spec(spec) else None
    if not reason or git_commits.is_git_spec(spec):
        return reason or ""
    print(f"kvh: installing {spec} (kvh sut install)", file=sys.stderr)
    try:
        install(*install_target(spec), SHARED_REQUIREMENTS)
    except subprocess.CalledProcessError as error:
        return f"pip failed installing it (exit {error.returncode})"
    except SutLoadError as error:  # the first line: the import chain's frames are for sut install
        return f"it installs but does not import: {str(error).splitlines()[0]}"
    return not_ready_reason(spec) or ""


def install_target(text: str) -> tuple[str, str]:
    """(the SUT spec a run names, the pip requirement) for `kvh sut install TEXT`: a release
    `sglang==X`, or a fork `NAME=REQUIREMENT`, run as `sglang==NAME`."""
    if RELEASE.match(text):
        return text, text
    fork = FORK.match(text)
    if fork:
        return f"sglang=={fork.group(1)}", fork.group(2)
    raise ValueError(
        f"cannot install {text!r}: expected sglang==VERSION or NAME=REQUIREMENT (a fork: a "
        "wheel, URL or git+ requirement that installs the sglang package)"
    )


def install(
    spec: str, requirement: str, requirements: Path, quiet: bool = True
) -> tuple[Path, bool]:
    """Install `requirement` (install_target: a release or a fork) with --no-deps into the cache
    folder of `spec`, with the dependencies it needs at other versions than here, and the shared
    CPU dependency set into this environment. Returns (folder, whether anything was installed).
    Holds the release's lock throughout, and the shared set's while pip writes this environment:
    a concurrent install of the same release waits, then returns (folder, False)."""
    folder = target_dir(spec)
    if installed(spec) and not missing_shared_modules():
        return folder, False
    with install_lock.held(folder.with_name(folder.name + ".lock"), spec):
        return _install_held(spec, folder, requirement, requirements, quiet)


def _install_held(
    spec: str, folder: Path, requirement: str, requirements: Path, quiet: bool
) -> tuple[Path, bool]:
    if installed(spec) and not missing_shared_modules():
        return folder, False  # installed by whoever held the lock before us
    flags = ["-q"] if quiet else []
    pip = [sys.executable, "-m", "pip", "install", *flags]
    with install_lock.held(cache_root() / "shared-requirements.lock", "the shared dependencies"):
        subprocess.run([*pip, "-r", str(requirements)], check=True)
    if installed(spec):
        return folder, True
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run([*pip, "--no-deps", "--target", str(staging), requirement], check=True)
    added = _own_dependencies(staging, pip, providers(staging, "sglang"), release=True)
    added += _what_its_import_needs(staging, pip)
    record = {"spec": spec, "requirement": requirement, "own_dependencies": added}
    (staging / MARKER).write_text(json.dumps(record) + "\n")
    staging.replace(folder)  # a half-finished install never looks installed
    return folder, True


def _own_dependencies(
    staging: Path, pip: list[str], names: list[str], release: bool = False
) -> list[str]:
    """Install into `staging` what the distributions `names` need at other versions than this
    environment has, or that it lacks (`release`: the release itself, only its exact pins of what
    is here; release_deps.needed); returns the requirements installed."""
    added: list[str] = []
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


# A module the import chain stops on: absent here, or only a stand-in that lacks a name.
IMPORT_STOP = re.compile(
    r"missing module '(?P<missing>[\w.]+)'"
    r"|cannot import name '\w+' from '(?P<standin>[\w.]+)' \(unknown location\)"
)


def _what_its_import_needs(staging: Path, pip: list[str]) -> list[str]:
    """Import the release as a run will; where the import chain stops on a module this
    environment lacks (or has only as a stand-in) and the release requires by name (0.5.16 pins
    xgrammar, 0.5.18 openai), install that requirement and what it needs, and try again.
    Returns what was installed; a stop no requirement explains is the SutLoadError."""
    added: list[str] = []
    for _ in range(IMPORT_ROUNDS):
        try:
            check_import(staging)
            return added
        except SutLoadError as error:
            stop = IMPORT_STOP.search(str(error))
            module = (stop.group("missing") or stop.group("standin")) if stop else None
            wanted = module and requirement_for_module(staging, "sglang", module.split(".")[0])
            if not wanted or wanted in added:
                raise
        subprocess.run([*pip, "--no-deps", "--target", str(staging), wanted], check=True)
        added += [wanted, *_own_dependencies(staging, pip, [Requirement(wanted).name])]
    check_import(staging)
    return added


def check_import(folder: Path) -> None:
    """Import the release in a worker, as a run will: a folder that cannot import is never
    called installed. SutLoadError carries the worker's import chain."""
    from harness.sut.worker.client import IsolatedSut

    with IsolatedSut("sglang", prefix=str(folder)) as worker:
        worker.hello_or_error()
