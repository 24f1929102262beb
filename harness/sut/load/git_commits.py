"""A commit of a local SGLang git checkout as a SUT: `sglang@git:PATH#REV` (REV: HEAD if left out).

The commit's package (`python/sglang`, backends/sglang_names.py CHECKOUT_PACKAGE) is checked out
into a worktree of the checkout under the release cache, `$KVH_CACHE/suts/git/<full SHA>`, and
reused by every later run of that commit. The worktree holds that folder alone, so a commit costs
its package's bytes, not the repository's. The user's working tree, branch and HEAD are never
touched: `git worktree add` only records the cache folder in the checkout's worktree list
(`git worktree prune` forgets it once the cache is cleared).

A run records the spec with the full SHA and the checkout's absolute path (`canonical`), so a
repro file replays the same commit whatever the branch has become since.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from backends.sglang_names import CHECKOUT_PACKAGE
from harness.sut.load import install_lock

GIT_SPEC = re.compile(r"^sglang@git:(?P<path>[^#]+)(?:#(?P<rev>[^#]+))?$")
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
MARKER = "kvh-commit.json"  # written last: a worktree without it is half made


class GitSpecError(ValueError):
    """A `sglang@git:` spec that names no judgeable commit; the message is one line that says
    which part is wrong."""


@dataclass(frozen=True)
class Commit:
    checkout: Path  # the repository's top level, absolute
    sha: str  # full

    @property
    def spec(self) -> str:
        return f"sglang@git:{self.checkout}#{self.sha}"

    @property
    def worktree(self) -> Path:
        return commit_cache() / self.sha

    @property
    def sut_folder(self) -> Path:
        """The folder that holds `sglang/`, as `sglang@DIR` names one."""
        return self.worktree / Path(CHECKOUT_PACKAGE).parent


def commit_cache() -> Path:
    from harness.sut.load.environments import cache_root  # which imports this module

    return cache_root() / "git"


def is_git_spec(spec: str) -> bool:
    return spec.startswith("sglang@git:")


def git(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    """`git -C folder ARGUMENTS`, its output captured as text; the caller reads the return code."""
    return subprocess.run(
        ["git", "-C", str(folder), *arguments], capture_output=True, text=True, check=False
    )


def checkout_root(path: str) -> Path:
    """The top level of the git checkout at `path`; GitSpecError where it is none."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise GitSpecError(f"{path} is not a git checkout: no such folder")
    top = git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise GitSpecError(f"{path} is not a git checkout ({_first_line(top.stderr)})")
    return Path(top.stdout.strip()).resolve()


def resolve(checkout: Path, revision: str) -> str:
    """The full SHA of the commit `revision` names in `checkout`; GitSpecError where none."""
    found = git(
        checkout, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"
    )
    if found.returncode != 0:
        raise GitSpecError(f"revision {revision!r} does not resolve to a commit in {checkout}")
    return found.stdout.strip()


def has_package(checkout: Path, sha: str) -> bool:
    return git(checkout, "cat-file", "-e", f"{sha}:{CHECKOUT_PACKAGE}").returncode == 0


def commit_at(path: str, revision: str = "HEAD") -> Commit:
    """The commit `revision` of the checkout at `path`, checked: the folder is a git checkout, the
    revision resolves, and the commit has the package. GitSpecError says which fails."""
    checkout = checkout_root(path)
    sha = resolve(checkout, revision)
    if not has_package(checkout, sha):
        raise GitSpecError(
            f"commit {sha[:12]} of {checkout} has no {CHECKOUT_PACKAGE}/: not an SGLang checkout"
        )
    return Commit(checkout, sha)


def commit_of(spec: str) -> Commit:
    match = GIT_SPEC.match(spec)
    if match is None:
        raise GitSpecError(f"{spec!r}: expected sglang@git:PATH or sglang@git:PATH#REVISION")
    return commit_at(match.group("path"), match.group("rev") or "HEAD")


def canonical(spec: str) -> str:
    """`spec` with the checkout's absolute path and the commit's full SHA."""
    return commit_of(spec).spec


def cached_folder(spec: str) -> Optional[Path]:
    """The SUT folder of a canonical spec whose worktree is complete in the cache, else None.
    Needs no git: a repro of a commit whose worktree is cached replays without the checkout."""
    match = GIT_SPEC.match(spec)
    sha = match and match.group("rev")
    if not sha or not FULL_SHA.match(sha):
        return None
    commit = Commit(Path(match.group("path")), sha)
    return commit.sut_folder if (commit.worktree / MARKER).is_file() else None


def cached_commits() -> list[tuple[str, Path]]:
    """(canonical spec, worktree) of each commit checked out in the cache (`kvh sut list`)."""
    markers = sorted(commit_cache().glob(f"*/{MARKER}"))
    return [(json.loads(marker.read_text())["spec"], marker.parent) for marker in markers]


def materialise(spec: str) -> str:
    """Check out the commit's package into its cached worktree unless it is there; returns the
    canonical spec. One process at a time per commit (install_lock), as a release install."""
    if cached_folder(spec) is not None:
        return spec
    commit = commit_of(spec)
    worktree = commit.worktree
    with install_lock.held(worktree.with_name(worktree.name + ".lock"), commit.spec):
        if not (worktree / MARKER).is_file():
            _add_worktree(commit)
    return commit.spec


def _add_worktree(commit: Commit) -> None:
    worktree = commit.worktree
    if worktree.exists():  # an earlier checkout stopped half way
        git(commit.checkout, "worktree", "remove", "--force", str(worktree))
        shutil.rmtree(worktree, ignore_errors=True)
    # --force: the folder may be recorded still from a cache cleared since (no prune needed);
    # --no-checkout, then the package alone: a commit costs what its package weighs.
    steps = (
        (commit.checkout, "worktree", "add", "--force", "--detach", "--no-checkout",
         str(worktree), commit.sha),
        (worktree, "checkout", commit.sha, "--", CHECKOUT_PACKAGE),
    )  # fmt: skip
    for folder, *arguments in steps:
        done = git(folder, *arguments)
        if done.returncode != 0:
            raise GitSpecError(
                f"git {' '.join(arguments[:2])} of {commit.sha[:12]} failed: "
                f"{_first_line(done.stderr)}"
            )
    record = {"spec": commit.spec, "checkout": str(commit.checkout), "sha": commit.sha}
    (worktree / MARKER).write_text(json.dumps(record) + "\n")


def subject(checkout: Path, sha: str) -> str:
    """The commit's subject line."""
    return git(checkout, "log", "-1", "--format=%s", sha).stdout.strip()


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[0]
