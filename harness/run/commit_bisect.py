"""Bisect over the commits of a local SGLang checkout, driven by `git bisect` itself.

git chooses each commit to try (merges and all), and kvh judges it: a commit whose check behaves
as GOOD's is good, one that behaves otherwise is bad, one that cannot be judged (it does not
import, or fits no call convention) is skipped, and git tries its neighbours. The bisection runs
in a scratch worktree of the checkout with `--no-checkout`, so neither the user's working tree nor
a bisection of their own is touched, and it is reset and removed however it ends, an interrupt
included.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from harness.exit_codes import HeldSignals, Interrupted
from harness.run.bisect import Probe
from harness.sut.load.git_commits import commit_cache, git

FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
ONLY_SKIPPED = "There are only 'skip'ped commits left to test"
SHA_LINE = re.compile(r"^([0-9a-f]{40})\b", re.M)


class CommitBisectError(RuntimeError):
    """git refused a step of the bisection; the message says which and why."""


@dataclass
class CommitBisection:
    good: str
    bad: str
    probes: list[Probe] = field(default_factory=list)  # in the order git asked for them
    first_changed: Optional[str] = None  # the first commit that behaves otherwise than GOOD
    # Where only skipped commits are left: every commit the change may be in.
    could_be: tuple[str, ...] = ()


def bisect_commits(
    checkout: Path, good: str, bad: str, expected: str, judge: Callable[[str], Probe]
) -> CommitBisection:
    """The first commit between GOOD and BAD (full SHAs, GOOD an ancestor of BAD, BAD known to
    behave otherwise) whose `judge(sha)` behaviour differs from `expected`, GOOD's behaviour."""
    result = CommitBisection(good, bad)
    scratch = commit_cache() / f"bisect-{os.getpid()}-{secrets.token_hex(4)}"
    scratch.parent.mkdir(parents=True, exist_ok=True)
    _step(checkout, "worktree", "add", "--detach", "--no-checkout", str(scratch), bad)
    try:
        said = _step(scratch, "bisect", "start", "--no-checkout", bad, good)
        while not _finished(said, result):
            sha = _step(scratch, "rev-parse", "BISECT_HEAD").strip()
            probe = judge(sha)
            result.probes.append(probe)
            verdict = "skip" if probe.skipped else "good" if probe.behaviour == expected else "bad"
            said = _step(scratch, "bisect", verdict, sha, done_is_ok=True)
    finally:
        _remove(checkout, scratch)
    return result


def _finished(said: str, result: CommitBisection) -> bool:
    first = FIRST_BAD.search(said)
    if first:
        result.first_changed = first.group(1)
        return True
    if ONLY_SKIPPED in said:
        result.could_be = tuple(SHA_LINE.findall(said.split(ONLY_SKIPPED, 1)[1]))
        return True
    return False


def _step(folder: Path, *arguments: str, done_is_ok: bool = False) -> str:
    """git's output of one step; CommitBisectError where it fails. `git bisect skip` exits 2 once
    only skipped commits are left (`done_is_ok`): that is an answer, not a failure."""
    done = git(folder, *arguments)
    if done.returncode != 0 and not (done_is_ok and ONLY_SKIPPED in done.stdout):
        message = (done.stderr.strip() or done.stdout.strip() or "no message").splitlines()[0]
        raise CommitBisectError(f"git {' '.join(arguments[:2])} failed: {message}")
    return done.stdout


def _remove(checkout: Path, scratch: Path) -> None:
    """`git bisect reset` and the scratch worktree removed, finishing whatever signal arrives
    meanwhile; that signal is raised again once both are done."""
    held = HeldSignals().hold()
    try:
        git(scratch, "bisect", "reset")
        git(checkout, "worktree", "remove", "--force", str(scratch))
    finally:
        signum = held.release()
    if signum is not None:
        raise Interrupted(signum)
