"""`kvh bisect GOOD BAD`: the first SGLang release between two whose behaviour on one check
differs from GOOD's (harness/run/bisect.py), installing the releases it tries.

The check is a repro file's (`--repro`: its scenario, backend and mode) or a builtin scenario's
(`--scenario NAME --pool P --dtype D`, through `--backend` and `--mode`). The releases are the
package index's between GOOD and BAD (`sglang==X` each), or `--releases` in the order given."""

from __future__ import annotations

import argparse
import sys

from backends.registry import BACKENDS, backend_named
from harness.cli.arguments import csv_list, seed_int
from harness.exit_codes import EXIT_OK, UsageError
from harness.report.repro_files import ReproError, load_repro
from harness.run.bisect import Bisection, Probe, behaviour_of, bisect
from harness.sut.load.environments import (
    RELEASE,
    ensure_installed,
    is_isolated_spec,
    not_ready_reason,
)
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.release_index import ReleaseIndexError, between, index_versions
from pools.kinds.token_major import SWA_MHA
from scenarios.defaults import default_scenarios
from scenarios.model import Scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("good", help="the release the behaviour starts from, e.g. sglang==0.5.14")
    parser.add_argument("bad", help="a later release that behaves otherwise, e.g. sglang==0.5.23")
    check = parser.add_mutually_exclusive_group(required=True)
    check.add_argument("--repro", help="a repro file of kvh run: its scenario, backend and mode")
    check.add_argument("--scenario", help="a builtin scenario's name (with --pool and --dtype)")
    parser.add_argument("--pool", default=SWA_MHA.name)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--backend", default="plain", choices=list(BACKENDS))
    parser.add_argument("--mode", default="extend")
    parser.add_argument(
        "--releases",
        type=csv_list,
        help="the SUT specs between GOOD and BAD, in release order (default: the index's)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="skip releases not installed, install none"
    )
    parser.set_defaults(handler=main)


def _check(arguments: argparse.Namespace) -> tuple[Scenario, str, str]:
    if arguments.repro:
        try:
            scenario, candidate, _ = load_repro(arguments.repro)
        except ReproError as error:
            raise UsageError(str(error)) from None
        return scenario, candidate["backend"], candidate["mode"]
    by_name = {
        s.name: s for s in default_scenarios(arguments.pool, arguments.dtype, arguments.seed)
    }
    if arguments.scenario not in by_name:
        raise UsageError(
            f"no builtin scenario {arguments.scenario!r} for {arguments.pool}/{arguments.dtype}; "
            f"choose from {', '.join(sorted(by_name))}"
        )
    return by_name[arguments.scenario], arguments.backend, arguments.mode


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
    scenario, backend_name, mode = _check(arguments)
    backend = backend_named(backend_name)
    if mode not in backend.modes:
        raise UsageError(f"{backend_name} has no mode {mode!r}; it has {', '.join(backend.modes)}")
    releases = _releases(arguments)

    def judge(spec: str) -> Probe:
        if arguments.no_install:
            reason = (not_ready_reason(spec) if is_isolated_spec(spec) else None) or ""
        else:
            reason = ensure_installed(spec)
        if not reason:
            try:
                probe = Probe(spec, behaviour_of(spec, scenario, backend, mode))
            except (SutLoadError, ValueError) as error:
                reason = str(error)
        if reason:  # its first line: an import chain's frames are for `kvh sut install`
            probe = Probe(spec, skipped=reason.splitlines()[0])
        print(f"kvh: {spec}: {probe.behaviour or 'skipped: ' + probe.skipped}", file=sys.stderr)
        return probe

    try:
        result = bisect(releases, judge)
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
