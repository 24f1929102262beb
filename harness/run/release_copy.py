"""A release's `sglang/` package as a scratch folder that an edit may change without reaching
the release: the folder a SUT spec names, a whole copy (hard-linked where it can be), or a sparse
mirror whose edited files and the folders on their way are its own."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

from harness.sut.load.environments import installed


def release_folder(spec: str) -> Path:
    """The folder that holds `sglang/` for `sglang` (this environment's), `sglang==X` (a release
    kvh sut install made) or `sglang@DIR`."""
    if spec == "sglang":
        found = importlib.util.find_spec("sglang")  # locates the package without importing it
        if found is None or not found.submodule_search_locations:
            raise ValueError("no sglang package is installed here")
        return Path(list(found.submodule_search_locations)[0]).parent
    folder = installed(spec)
    if folder is None:
        raise ValueError(f"SUT {spec} is not installed; run: kvh sut install {spec}")
    return folder


def release_named(spec: str) -> str:
    """`sglang==X` for a spec whose folder carries the distribution's metadata (`sglang` here, a
    cached release, a folder holding `sglang-X.dist-info`), else the spec: survivors' records are
    kept per release version, and `sglang` is whichever release this environment has."""
    if spec.startswith("sglang=="):
        return spec
    try:
        folder = release_folder(spec)
    except ValueError:
        return spec
    found = [d for d in importlib.metadata.distributions(path=[str(folder)]) if d.name == "sglang"]
    return f"sglang=={found[0].version}" if found else spec


def _link_or_copy(source: str, dest: str) -> None:
    try:
        os.link(source, dest)
    except OSError:  # another filesystem: a copy
        shutil.copy2(source, dest)


def copy_release(source: Path, dest: Path, with_siblings: bool, linked: bool = False) -> Path:
    """`source/sglang` copied to `dest/sglang`; with_siblings, every other entry of a release
    folder (its own dependencies) symlinked beside it; `linked`, its files hard-linked where the
    filesystem allows (a caller must give a file a copy of its own before editing it). Returns
    dest."""
    dest.mkdir(parents=True, exist_ok=True)
    copy = _link_or_copy if linked else shutil.copy2
    shutil.copytree(source / "sglang", dest / "sglang", symlinks=True, copy_function=copy)
    if with_siblings:
        for entry in source.iterdir():
            if entry.name != "sglang" and not (dest / entry.name).exists():
                (dest / entry.name).symlink_to(entry.resolve())
    return dest


def sparse_copy(source: Path, dest: Path, edited: list[Path], with_siblings: bool) -> Path:
    """`source/sglang` mirrored at `dest/sglang` by symlinks, but for each file in `edited`
    (relative to source, under sglang/) and each folder on the way to one: those are a file and
    folders of their own, the file a copy. For a campaign whose copies each edit a few of the
    release's thousands of files (copy_release links every file: a second a copy on 0.5.23).
    A folder of its own links the release's bytecode of its unedited modules and no other; a
    judge of the copy writes no bytecode (forked_judges.py), so nothing compiled from an edit
    lands in the release. The package's `__init__.py` is always a copy: the loader takes a
    package whose real path is under the folder it was given, and no other. Returns dest."""
    edited = list(dict.fromkeys([Path("sglang") / "__init__.py", *edited]))
    own = {Path("sglang")} | {parent for f in edited for parent in f.parents if parent != Path(".")}
    stems = {(f.parent, f.stem) for f in edited}
    for folder in sorted(own):
        (dest / folder).mkdir(parents=True, exist_ok=True)
        for entry in (source / folder).iterdir():
            relative = folder / entry.name
            if relative in own or relative in edited:
                continue
            if entry.name != "__pycache__":
                (dest / relative).symlink_to(entry.resolve())
                continue
            # The release's bytecode of the folder's unedited modules, linked one by one.
            (dest / relative).mkdir()
            for compiled in entry.iterdir():
                if (folder, compiled.name.split(".", 1)[0]) not in stems:
                    (dest / relative / compiled.name).symlink_to(compiled.resolve())
    for f in edited:
        shutil.copy2(source / f, dest / f)
    if with_siblings:
        for entry in source.iterdir():
            if entry.name != "sglang" and not (dest / entry.name).exists():
                (dest / entry.name).symlink_to(entry.resolve())
    return dest
