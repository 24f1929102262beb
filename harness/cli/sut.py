"""`kvh sut install sglang==X`, `kvh sut list` and `kvh sut check`: the isolated SUT environments,
and a release's write call sites checked against the harness's call-site model."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import time
from pathlib import Path

from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.run.door_trials import DoorTrial, try_base_doors
from harness.sut.load import git_commits
from harness.sut.load.environments import (
    RELEASE,
    SHARED_REQUIREMENTS,
    cache_root,
    install,
    install_target,
    installed,
    installed_metadata,
    load_isolated,
    target_dir,
)
from harness.sut.load.load_errors import SutLoadError
from harness.sut.load.optional_pools import offered_classes
from harness.sut.probe.capabilities import Capabilities, probe
from harness.sut.probe.census import census
from harness.sut.probe.census_call_sites import BACKEND_MODELS, ERA_NAMES
from harness.sut.probe.census_compare import (
    branch_mismatches,
    compare,
    files_present,
    notes,
    unmodelled_files,
)
from harness.sut.probe.detect import describe, era_of, missing_constructors
from harness.sut.probe.source_capabilities import probe_source
from harness.sut.probe.write_doors import cpu_count, driven_count, write_doors

REQUIREMENTS = SHARED_REQUIREMENTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    install_parser = actions.add_parser("install", help="install releases into the SUT cache")
    install_parser.add_argument(
        "specs",
        nargs="+",
        metavar="sglang==VERSION|NAME=REQUIREMENT",
        help="a release from PyPI, or a fork under a name of yours: a wheel, URL or git+ "
        "requirement that installs the sglang package (run it as --sut sglang==NAME)",
    )
    actions.add_parser("list", help="list installed SUT environments")
    check = actions.add_parser(
        "check",
        help="probe a release's capabilities and check its write call sites against "
        "the harness's call-site model",
    )
    check.add_argument(
        "spec",
        metavar="sglang==VERSION|sglang|DIR",
        help="an installed isolated release, the installed package, or a folder "
        "holding the `sglang` package (or the package folder itself)",
    )
    check.add_argument(
        "--era", choices=ERA_NAMES, help="compare with this era's model instead of the probed one"
    )
    check.add_argument(
        "--verbose", action="store_true", help="also list what the model leaves out on purpose"
    )
    parser.set_defaults(handler=main)


def _package_root(spec: str) -> tuple[Path, bool]:
    """The folder that holds `sglang/`, and whether the package can be imported here."""
    if RELEASE.match(spec):
        folder = installed(spec)
        if folder is None:
            raise UsageError(f"{spec} is not installed; run: kvh sut install {spec}")
        return folder, False
    if spec == "sglang":
        found = importlib.util.find_spec("sglang")
        if found is None or not found.origin:
            raise UsageError(
                "sglang is not installed here; run: kvh sut install sglang==VERSION "
                "and check sglang==VERSION, or name a folder"
            )
        return Path(found.origin).parent.parent, True
    folder = Path(spec.split("@", 1)[1] if spec.startswith("sglang@") else spec)
    if (folder / "sglang").is_dir():
        return folder, False
    if folder.name == "sglang" and (folder / "srt").is_dir():
        return folder.parent, False
    raise UsageError(
        f"{spec!r}: no sglang package there (expected sglang==VERSION, sglang, or a "
        "folder holding sglang/); to install a release: kvh sut install sglang==VERSION"
    )


def _capabilities(root: Path, importable: bool) -> tuple[Capabilities, str]:
    """Probe the loaded module where it imports here, else decide from the source."""
    if importable:
        from harness.sut.load.sglang_loader import load_sglang

        try:
            return probe(load_sglang()), "probed from the loaded module"
        except SutLoadError as error:
            return probe_source(root), f"read from the source (import failed: {error})"
    return probe_source(root), "read from the source"


def check(spec: str, forced_era: str | None = None, verbose: bool = False) -> int:
    root, importable = _package_root(spec)
    caps, how = _capabilities(root, importable)
    print(f"{spec}: {root}")
    print(f"capabilities ({how}):")
    for line in describe(caps):
        print(f"  {line}")
    era, missing = era_of(caps)
    if forced_era:
        print(f"era forced: {forced_era}")
        era = forced_era
    if era is None:
        print("its call sites fit no modelled call convention; missing: " + "; ".join(missing))
        return EXIT_FINDINGS
    release, direct = census(root), missing_constructors(caps)
    mismatched = False
    for name, model in BACKEND_MODELS.items():
        if not files_present(model, release):
            print(f"{name}: no file in this release ({', '.join(model.files)})")
            continue
        found = compare(release, model, era, direct) + branch_mismatches(release, model, era)
        mismatched |= bool(found)
        print(f"{name}: model matches" if not found else f"{name}: {len(found)} mismatch(es)")
        for mismatch in found:
            print(f"  {mismatch.describe()}")
        if verbose:
            for line in notes(release, model, era, direct):
                print(f"  note: {line}")
    doors = write_doors(Path(root), offered_classes(Path(root)))
    print(
        f"{driven_count(doors)} (write doors: set_*buffer* methods of its pool classes); "
        f"{cpu_count(doors)}"
    )
    for door in doors:
        print(f"  {door.describe()}")
    # A file no backend claims is a finding: an upstream backend fails the nightly check the day
    # it lands, instead of a line nobody reads.
    others = unmodelled_files(release)
    if others:
        print(
            "write calls in files no backend model claims: "
            + ", ".join(Path(name).name for name in others)
            + " (add a backend module for each: docs/backends.md)"
        )
    return EXIT_FINDINGS if mismatched or others else EXIT_OK


def main(arguments: argparse.Namespace) -> int:
    if arguments.action == "check":
        return check(arguments.spec, arguments.era, arguments.verbose)
    if arguments.action == "list":
        root = cache_root()
        folders = sorted(p for p in root.glob("sglang-*") if p.is_dir()) if root.is_dir() else []
        for folder in folders:
            state = (
                "ready" if installed(f"sglang=={folder.name.split('-', 1)[1]}") else "incomplete"
            )
            print(f"{folder.name}\t{state}\t{folder}")
        commits = git_commits.cached_commits()
        for spec, folder in commits:
            print(f"{spec}\tready\t{folder}")
        if not folders and not commits:
            print(f"no SUT environments under {root}")
        return EXIT_OK
    try:
        targets = [(text, *install_target(text)) for text in arguments.specs]
    except ValueError as error:
        raise UsageError(str(error)) from None
    for text, spec, requirement in targets:
        started = time.monotonic()
        try:
            folder, fresh = install(spec, requirement, REQUIREMENTS)
        except subprocess.CalledProcessError as error:
            raise UsageError(f"pip failed installing {text} (exit {error.returncode})") from None
        except SutLoadError as error:
            raise UsageError(
                f"{text} installed but does not import, so it is not ready (left in "
                f"{target_dir(spec).name}.partial for a look): {error}"
            ) from None
        took = time.monotonic() - started
        verb = "installed and imported" if fresh else "already installed"
        trials = door_trials(spec)
        stopped = [trial for trial in trials if not trial.runs]
        if stopped:  # it imports, yet a run could not judge those writes here
            verb += f", but {len(stopped)} of its {len(trials)} base write doors cannot run here"
        print(f"{text}: {verb} in {folder} ({took:.1f}s); run it with --sut {spec}")
        own = installed_metadata(spec).get("own_dependencies")
        if own:
            print(f"  its own versions of: {', '.join(own)}")
        for trial in trials:
            print(f"  {trial.describe()}")
    return EXIT_OK


def door_trials(spec: str) -> list[DoorTrial]:
    """One small write through each base door in the release's worker (harness/run/
    door_trials.py): a release that imports may still be unable to write here, and a run would
    skip those checks. Said, never failed: the install itself succeeded (exit 0)."""
    loaded = load_isolated(spec)
    try:
        return try_base_doors(loaded)
    finally:
        loaded.module.stop()
