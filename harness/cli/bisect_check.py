"""The check a bisection judges by, over releases or commits: a repro file's (`--repro`: its
scenario, backend and mode) or a builtin scenario's (`--scenario NAME --pool P --dtype D`, through
`--backend` and `--mode`), and one SUT's probe on it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from backends.registry import BACKENDS, backend_named
from harness.cli.arguments import choose, seed_int
from harness.exit_codes import UsageError
from harness.report.repro_files import ReproError, load_repro
from harness.run.bisect import Probe, probe_of
from harness.sut.load.environments import ensure_installed, is_isolated_spec, not_ready_reason
from harness.sut.load.load_errors import SutLoadError
from pools.dtypes import DTYPES
from pools.kinds.token_major import SWA_MHA
from scenarios.defaults import default_scenarios
from scenarios.model import POOL_KINDS, Scenario

Check = tuple[Scenario, str, str]  # (scenario, backend name, mode)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    check = parser.add_mutually_exclusive_group(required=True)
    check.add_argument("--repro", help="a repro file of kvh run: its scenario, backend and mode")
    check.add_argument("--scenario", help="a builtin scenario's name (with --pool and --dtype)")
    parser.add_argument("--pool", default=SWA_MHA.name)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--backend", default="plain", choices=list(BACKENDS))
    parser.add_argument("--mode", default="extend")


def check_of(arguments: argparse.Namespace) -> Check:
    """The check the options name, each part checked (UsageError where one is wrong)."""
    if arguments.repro:
        try:
            scenario, candidate, _ = load_repro(arguments.repro)
        except ReproError as error:
            raise UsageError(str(error)) from None
        scenario, backend_name, mode = scenario, candidate["backend"], candidate["mode"]
    else:
        choose([arguments.pool], POOL_KINDS, "pool")
        choose([arguments.dtype], DTYPES, "dtype")
        by_name = {
            s.name: s for s in default_scenarios(arguments.pool, arguments.dtype, arguments.seed)
        }
        if arguments.scenario not in by_name:
            raise UsageError(
                f"no builtin scenario {arguments.scenario!r} for {arguments.pool}/"
                f"{arguments.dtype}; choose from {', '.join(sorted(by_name))}"
            )
        scenario, backend_name, mode = (
            by_name[arguments.scenario],
            arguments.backend,
            arguments.mode,
        )
    backend = backend_named(backend_name)
    if mode not in backend.modes:
        raise UsageError(f"{backend_name} has no mode {mode!r}; it has {', '.join(backend.modes)}")
    return scenario, backend_name, mode


def check_options(arguments: argparse.Namespace) -> list[str]:
    """The options that name the same check again, for a command line kvh prints."""
    if arguments.repro:
        return ["--repro", str(Path(arguments.repro).resolve())]
    return [
        *("--scenario", arguments.scenario, "--pool", arguments.pool, "--dtype", arguments.dtype),
        *("--seed", str(arguments.seed), "--backend", arguments.backend, "--mode", arguments.mode),
    ]


def judge(spec: str, check: Check, install: bool, label: str = "") -> Probe:
    """One SUT's probe on the check, installed first where `install`; skipped (with the first
    line of why) where it cannot be judged. Printed as it goes, under `label` (default: spec)."""
    scenario, backend_name, mode = check
    label = label or spec
    if not install:
        reason = (not_ready_reason(spec) if is_isolated_spec(spec) else None) or ""
    else:
        reason = ensure_installed(spec)
    if not reason:
        try:
            probe = probe_of(spec, scenario, backend_named(backend_name), mode, label)
        except (SutLoadError, ValueError) as error:
            reason = str(error)
    if reason:  # its first line: an import chain's frames are for `kvh sut install`
        probe = Probe(label, skipped=reason.splitlines()[0])
    print(f"kvh: {label}: {probe.behaviour or 'skipped: ' + probe.skipped}", file=sys.stderr)
    return probe
