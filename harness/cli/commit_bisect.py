"""`kvh bisect --git PATH GOOD BAD`: the first commit of a local SGLang checkout whose behaviour on
one check differs from GOOD's. `git bisect` chooses the commits (harness/run/commit_bisect.py) and
kvh judges each as the SUT `sglang@git:PATH#SHA`.

`kvh bisect --git PATH --check REV --expect BEHAVIOUR` judges one commit for `git bisect run`, in
git's exit codes: 0 behaves as expected (good), 1 otherwise (bad), 125 cannot be judged (skip),
and 128 for bad input or a fault of kvh, which stops the bisection instead of calling the commit
bad."""

from __future__ import annotations

import argparse
import shlex
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from harness.cli import bisect_check
from harness.exit_codes import EXIT_OK, StopSignals, UsageError
from harness.run.bisect import Probe
from harness.run.commit_bisect import CommitBisectError, CommitBisection, bisect_commits
from harness.sut.load.git_commits import (
    Commit,
    GitSpecError,
    checkout_root,
    commit_at,
    git,
    resolve,
    subject,
)

GIT_GOOD, GIT_BAD, GIT_SKIP, GIT_ABORT = 0, 1, 125, 128


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--git",
        metavar="PATH",
        help="bisect the commits of the SGLang git checkout at PATH: GOOD and BAD are revisions",
    )
    parser.add_argument(
        "--check",
        metavar="REV",
        help="with --git: judge the one commit REV for `git bisect run` (exit 0 as --expect, "
        "1 otherwise, 125 cannot be judged, 128 bad input)",
    )
    parser.add_argument(
        "--expect", metavar="BEHAVIOUR", help="with --check: GOOD's behaviour, as kvh printed it"
    )


def main(arguments: argparse.Namespace) -> int:
    if arguments.git is None:
        raise UsageError("--check judges a commit of a checkout: give --git PATH")
    if arguments.check is not None:
        return _check_one(arguments)
    if arguments.releases is not None or arguments.no_install:
        raise UsageError("--releases and --no-install name releases; --git bisects commits")
    if arguments.good is None or arguments.bad is None:
        raise UsageError("kvh bisect --git PATH needs GOOD and BAD revisions")
    check = bisect_check.check_of(arguments)
    try:
        good, bad = (commit_at(arguments.git, rev) for rev in (arguments.good, arguments.bad))
    except GitSpecError as error:
        raise UsageError(str(error)) from None
    checkout = good.checkout
    ancestry = git(checkout, "merge-base", "--is-ancestor", good.sha, bad.sha)
    if good.sha == bad.sha or ancestry.returncode != 0:
        raise UsageError(
            f"GOOD {arguments.good} ({good.sha[:12]}) is not an ancestor of BAD {arguments.bad} "
            f"({bad.sha[:12]}): a bisection needs GOOD earlier in BAD's history"
        )
    first = _judge(checkout, check, good.sha)
    if first.skipped:
        raise UsageError(f"GOOD {arguments.good} cannot be judged: {first.skipped}")
    if first.finding:
        raise UsageError(
            f"GOOD {arguments.good} already fails the check ({first.behaviour}): start from a "
            "commit that passes it"
        )
    last = _judge(checkout, check, bad.sha)
    if last.skipped:
        raise UsageError(f"BAD {arguments.bad} cannot be judged: {last.skipped}")
    result = CommitBisection(good.sha, bad.sha, [first, last])
    if last.behaviour != first.behaviour:
        count = git(checkout, "rev-list", "--count", f"{good.sha}..{bad.sha}").stdout.strip()
        print(f"kvh: git bisect over the {count} commits after GOOD, up to BAD", file=sys.stderr)
        try:
            with StopSignals():  # SIGTERM too: the scratch worktree is removed however it ends
                found = bisect_commits(
                    checkout,
                    good.sha,
                    bad.sha,
                    first.behaviour,
                    lambda sha: _judge(checkout, check, sha),
                )
        except CommitBisectError as error:
            raise UsageError(str(error)) from None
        result = replace(found, probes=[first, last, *found.probes])
    for line in report(result, checkout, check):
        print(line)
    if last.behaviour != first.behaviour:
        for line in by_hand(arguments, checkout, result, first.behaviour):
            print(line)
    return EXIT_OK


def _judge(checkout: Path, check: bisect_check.Check, sha: str) -> Probe:
    label = f"{sha[:12]} {subject(checkout, sha)!r}"
    probe = bisect_check.judge(Commit(checkout, sha).spec, check, install=True, label=label)
    return replace(probe, release=sha)


def _check_one(arguments: argparse.Namespace) -> int:
    try:
        if arguments.expect is None:
            raise UsageError("--check needs --expect BEHAVIOUR: GOOD's, as kvh bisect printed it")
        check = bisect_check.check_of(arguments)
        checkout = checkout_root(arguments.git)
        sha = resolve(checkout, arguments.check)
        probe = _judge(checkout, check, sha)
    except (UsageError, GitSpecError) as error:
        print(f"kvh: error: {error}; stopping the bisection (exit {GIT_ABORT})", file=sys.stderr)
        return GIT_ABORT
    except Exception:  # kvh's own fault: exit 3 would read as "bad" to git bisect run
        traceback.print_exc()
        print(f"kvh: internal error of the harness (exit {GIT_ABORT})", file=sys.stderr)
        return GIT_ABORT
    if probe.skipped:
        return GIT_SKIP
    return GIT_GOOD if probe.behaviour == arguments.expect else GIT_BAD


def report(result: CommitBisection, checkout: Path, check: bisect_check.Check) -> list[str]:
    scenario, backend, mode = check
    g = scenario.geometry

    def named(sha: str) -> str:
        return f"{sha[:12]} {subject(checkout, sha)!r}"

    lines = [
        f"bisect of `{scenario.name}` ({g.pool}/{g.dtype}) through {backend}:{mode} over the "
        f"commits of {checkout} from {result.good[:12]} to {result.bad[:12]}, "
        f"{len(result.probes)} judged:"
    ]
    lines += [
        f"  {named(p.release)}: {p.behaviour or 'skipped: ' + p.skipped}" for p in result.probes
    ]
    good = result.probes[0]
    if result.first_changed is not None:
        changed = next(p for p in result.probes if p.release == result.first_changed)
        lines.append(
            f"first commit that behaves otherwise than {result.good[:12]}: "
            f"{named(result.first_changed)} ({good.behaviour} -> {changed.behaviour})"
        )
    elif result.could_be:
        lines.append(
            "the change is in one of these commits, which could not be judged: "
            + ", ".join(named(sha) for sha in result.could_be)
        )
    else:
        lines.append(f"no change: {result.bad[:12]} behaves as {result.good[:12]} does")
    skipped = [named(p.release) for p in result.probes if p.skipped]
    if skipped:
        lines.append(f"skipped (could not be judged): {', '.join(skipped)}")
    return lines


def by_hand(
    arguments: argparse.Namespace, checkout: Path, result: CommitBisection, expected: str
) -> list[str]:
    """The same bisection as plain `git bisect run` commands, with kvh's --check as the test."""
    check = [
        *("kvh", "bisect", "--git", str(checkout), "--check", "BISECT_HEAD"),
        *("--expect", expected, *bisect_check.check_options(arguments)),
    ]
    git_c = ["git", "-C", str(checkout), "bisect"]
    return [
        "by hand, with git bisect run (kvh --check exits 0 good, 1 bad, 125 skip, 128 stop):",
        "  " + shlex.join([*git_c, "start", "--no-checkout", result.bad, result.good]),
        "  " + shlex.join([*git_c, "run", *check]),
        "  " + shlex.join([*git_c, "reset"]),
    ]
