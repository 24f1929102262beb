"""`kvh bisect GOOD BAD`: the first SGLang release between two whose behaviour on one check
differs from GOOD's (harness/run/bisect.py), installing the releases it tries. With `--git PATH`,
GOOD and BAD are commits of a local SGLang checkout instead (harness/cli/commit_bisect.py).

The check is a repro file's or a builtin scenario's (harness/cli/bisect_check.py). The releases
are the package index's between GOOD and BAD (`sglang==X` each), or `--releases` in the order
given."""

from __future__ import annotations

import argparse

from harness.cli import bisect_check, commit_bisect
from harness.cli.arguments import csv_list
from harness.exit_codes import EXIT_OK, UsageError
from harness.run.bisect import Bisection, bisect
from harness.sut.load.environments import RELEASE
from harness.sut.load.release_index import ReleaseIndexError, between, index_versions
from scenarios.model import Scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "good",
        nargs="?",
        help="the release the behaviour starts from, e.g. sglang==0.5.14 (with --git: a commit)",
    )
    parser.add_argument(
        "bad", nargs="?", help="a later release that behaves otherwise, e.g. sglang==0.5.23"
    )
    bisect_check.add_arguments(parser)
    parser.add_argument(
        "--releases",
        type=csv_list,
        help="the SUT specs between GOOD and BAD, in release order (default: the index's)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="skip releases not installed, install none"
    )
    commit_bisect.add_arguments(parser)
    parser.set_defaults(handler=main)


def _releases(arguments: argparse.Namespace) -> list[str]:
    if arguments.releases is not None:
        return [arguments.good, *arguments.releases, arguments.bad]
    ends = [RELEASE.match(spec) for spec in (arguments.good, arguments.bad)]
    if not all(ends):
        raise UsageError("GOOD and BAD must be sglang==VERSION, or give the order with --releases")
    try:
        versions = between(index_versions(), ends[0].group(1), ends[1].group(1))
    except (ReleaseIndexError, ValueError) as error:
        raise UsageError(str(error)) from None
    return [f"sglang=={version}" for version in versions]


def main(arguments: argparse.Namespace) -> int:
    if arguments.git is not None or arguments.check is not None:
        return commit_bisect.main(arguments)
    if arguments.good is None or arguments.bad is None:
        raise UsageError("kvh bisect needs GOOD and BAD")
    check = bisect_check.check_of(arguments)
    scenario, backend_name, mode = check
    releases = _releases(arguments)
    try:
        result = bisect(
            releases, lambda spec: bisect_check.judge(spec, check, not arguments.no_install)
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    for line in report(result, scenario, backend_name, mode):
        print(line)
    return EXIT_OK


def report(result: Bisection, scenario: Scenario, backend: str, mode: str) -> list[str]:
    g = scenario.geometry
    lines = [
        f"bisect of `{scenario.name}` ({g.pool}/{g.dtype}) through {backend}:{mode} over "
        f"{len(result.releases)} releases, {len(result.probes)} tried:"
    ]
    tried = {probe.release: probe for probe in result.probes}
    for release in result.releases:
        probe = tried.get(release)
        said = "not tried" if probe is None else probe.behaviour or f"skipped: {probe.skipped}"
        lines.append(f"  {release}: {said}")
    first = result.releases[0]
    if result.first_changed is None:
        lines.append(f"no change: {result.releases[-1]} behaves as {first} does")
    else:
        lines.append(
            f"first release that behaves otherwise than {first}: {result.first_changed} "
            f"({result.behaviour(first)} -> {result.behaviour(result.first_changed)}); the last "
            f"that behaves as it: {result.last_same}"
        )
        low = result.releases.index(result.last_same)
        unjudged = result.releases[low + 1 : result.releases.index(result.first_changed)]
        if unjudged:
            lines.append(
                f"  the change may be in one of {', '.join(unjudged)}: they could not be judged"
            )
    return lines
