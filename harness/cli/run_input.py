"""`kvh run`'s input, validated before anything runs: every name, number, file and folder the
command line gives becomes a RunOptions and an Exploring, or a UsageError (exit 2, one line,
nothing written). The checks that need no torch come first, so a typo costs no import."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness.cli.arguments import check_device_and_out, check_writable, choose
from harness.exit_codes import UsageError
from scenarios.model import POOL_KINDS

if TYPE_CHECKING:
    from harness.plan.run_options import RunOptions
    from harness.run.exploring import Exploring


def options_from(arguments: argparse.Namespace) -> RunOptions:
    # The names that need no torch first, so the commonest typo costs no import.
    pools = choose(arguments.pool, POOL_KINDS, "pool")
    from backends.registry import BACKENDS
    from harness.plan.run_options import RunOptions
    from harness.plan.sharding import parse_shard
    from pools.builtin.engines import ENGINES
    from pools.builtin.eras import ERAS
    from pools.dtypes import DTYPES

    check_device_and_out(arguments.device, arguments.out)
    if arguments.junit is not None:
        check_writable(arguments.junit.parent, "--junit")
    try:
        shard = None if arguments.shard is None else parse_shard(arguments.shard)
    except ValueError as error:
        raise UsageError(str(error)) from None
    from harness.sut.worker.cp_group import CP_WORLD

    return RunOptions(
        shard=shard,
        scenarios=[_load_scenario(path) for path in arguments.scenario]
        if arguments.scenario
        else None,
        suts=arguments.sut or ["builtin"],
        pools=pools,
        dtypes=choose(arguments.dtype, DTYPES, "dtype"),
        eras=choose(arguments.era, ERAS, "era"),
        eras_named=arguments.era is not None,
        engines=choose(arguments.engine, ENGINES, "engine"),
        engines_named=arguments.engine is not None,
        backends=choose(arguments.backend, BACKENDS, "backend"),
        device=arguments.device,
        seed=arguments.seed,
        examples=arguments.examples,
        out=arguments.out,
        timeout_s=arguments.timeout,
        in_process=arguments.in_process,
        release_in_process=arguments.in_process,
        trail=arguments.trail,
        coverage=coverage_folder(arguments),
        cp_world=CP_WORLD,
    )


def coverage_folder(arguments: argparse.Namespace) -> Optional[Path]:
    """Where --coverage's workers measure into (None without it); a UsageError where no worker of
    a release would run to be measured."""
    if not getattr(arguments, "coverage", False):
        return None
    from harness.report.release_lines import DATA_FOLDER
    from harness.sut.load.loader import parse_builtin

    if all(parse_builtin(spec) is not None for spec in arguments.sut or ["builtin"]):
        raise UsageError(
            "--coverage measures a release's write path: name one with --sut "
            "(sglang, sglang==X, sglang@DIR)"
        )
    if arguments.in_process:
        raise UsageError("--coverage measures in the SUT's worker: leave out --in-process")
    if arguments.jobs > 1:
        raise UsageError("--coverage measures one worker's run: leave out --jobs")
    if getattr(arguments, "trail", False):
        # Both trace the worker, and Python keeps one trace function: the trail steps aside for
        # coverage.py (harness/run/release_trail.py), so its rows would name no function.
        raise UsageError("--coverage and --trail both trace the release: run them apart")
    return arguments.out / DATA_FOLDER


def _load_scenario(path: Path):
    from scenarios.serialize import ScenarioError, from_dict

    try:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(f"scenario file {path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"scenario file {path} is not valid JSON ({error})") from None
    except ScenarioError as error:
        raise UsageError(f"scenario file {path}: {error}") from None


def exploring_from(arguments: argparse.Namespace, environ: dict) -> Optional[Exploring]:
    from harness.run.exploring import Exploring
    from scenarios.profiles import PROFILE_ENV, chosen_profile, database_dir

    try:
        profile = chosen_profile(arguments.profile, environ)
    except ValueError as error:
        raise UsageError(f"{error} (from --profile or ${PROFILE_ENV})") from None
    if profile is None:
        if arguments.special_values or arguments.no_shrink:
            flag = "--special-values" if arguments.special_values else "--no-shrink"
            raise UsageError(f"{flag} needs --profile")
        return None
    if arguments.scenario:
        raise UsageError("--scenario runs the given scenarios; it does not combine with --profile")
    return Exploring(
        profile,
        arguments.examples or None,
        arguments.special_values,
        database_dir(environ),
        shrink=not arguments.no_shrink,
    )
