"""The dependencies a release needs in its own folder, read from its metadata, not from a list
of versions we know.

A release folder is layered in front of this environment (harness/sut/load/environments.py).
Where the release pins a package this environment has at another version (0.5.12 pins
transformers 5.6.0, this environment has 5.19.0), that pin goes into the release's folder, and so,
in turn, does
each requirement of those packages that this environment does not satisfy, absent ones included
(transformers 5.6's tokenizers and hub, the hub's httpx). A package the release itself pins but
this environment lacks stays absent (the loader stands in for what the write path does not
use) unless the release's import chain stops on it (requirement_for_module, driven by
harness/sut/load/environments.py); the device stack and CUDA-only or heavy packages are never
installed (never_followed).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# The machine's own accelerator stack, and numpy under it: a release's pin of these is never
# followed (a folder in front of sys.path would shadow what torch was built against).
DEVICE_STACK = frozenset(
    canonicalize_name(name)
    for name in (
        "torch",
        "triton",
        "torch_npu",
        "torchaudio",
        "torchvision",
        "pytorch-triton",
        "numpy",
    )
)

# What is never installed into a release folder, whatever the release requires: CUDA-only or
# heavy packages whose modules the write path on a CPU does not reach (stand-ins take their
# place where an import needs them, harness/sut/load/sglang_standins.py).
HEAVY_PREFIXES = ("nvidia-", "cuda-", "flashinfer", "sgl-kernel", "flash-attn", "deep-gemm")
HEAVY = frozenset(canonicalize_name(name) for name in ("vllm", "xformers", "torchao", "mooncake"))


def never_followed(name: str) -> bool:
    """The device stack, and CUDA-only or heavy packages (HEAVY, HEAVY_PREFIXES)."""
    key = canonicalize_name(name)
    return key in DEVICE_STACK or key in HEAVY or key.startswith(HEAVY_PREFIXES)


Version = Callable[[str], Optional[str]]


def environment_version(name: str) -> Optional[str]:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requirements(distribution: importlib.metadata.Distribution) -> list[Requirement]:
    found = []
    for text in distribution.requires or []:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            found.append(requirement)
    return found


def providers(folder: Path, package: str) -> list[str]:
    """The distributions in `folder` that install `package` (a fork may call itself otherwise)."""
    return [
        dist.metadata["Name"]
        for dist in importlib.metadata.distributions(path=[str(folder)])
        if any(str(path).startswith(f"{package}/") for path in dist.files or ())
    ]


def requirement_for_module(folder: Path, package: str, module: str) -> Optional[str]:
    """The requirement of `package` (installed in `folder`) that provides the top-level module
    `module` by name (`xgrammar`, `openai`; `_` read as `-`), unless never followed."""
    names = {canonicalize_name(module), canonicalize_name(module.replace("_", "-"))}
    for dist in importlib.metadata.distributions(path=[str(folder)]):
        if canonicalize_name(dist.metadata["Name"]) != canonicalize_name(package):
            continue
        for requirement in _requirements(dist):
            if canonicalize_name(requirement.name) in names and not never_followed(
                requirement.name
            ):
                return f"{requirement.name}{requirement.specifier}"
    return None


def _pinned(requirement: Requirement) -> bool:
    return any(spec.operator == "==" for spec in requirement.specifier)


def needed(
    folder: Path,
    names: Iterable[str],
    version_here: Version = environment_version,
    release: bool = False,
) -> list[str]:
    """Requirement strings of the distributions `names` (installed in `folder`) that must go into
    `folder`: not in the device stack, not satisfied by `folder`, nor by this environment.
    `release`: `names` is the release itself, which pins many things it runs without, so only
    its exact pins of packages this environment has are followed."""
    in_folder = {
        canonicalize_name(dist.metadata["Name"]): dist
        for dist in importlib.metadata.distributions(path=[str(folder)])
    }
    wanted: dict[str, str] = {}
    for name in names:
        distribution = in_folder.get(canonicalize_name(name))
        if distribution is None:
            continue
        for requirement in _requirements(distribution):
            key = canonicalize_name(requirement.name)
            here = version_here(requirement.name)
            if never_followed(key) or (release and (here is None or not _pinned(requirement))):
                continue
            local = in_folder.get(key)
            satisfied_by = local.version if local is not None else here
            if satisfied_by is None or not requirement.specifier.contains(
                satisfied_by, prereleases=True
            ):
                wanted[key] = f"{requirement.name}{requirement.specifier}"
    return sorted(wanted.values())
