"""`kvh sut install sglang==X` and `kvh sut list`: the isolated SUT environments."""
from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from harness.errors import EXIT_OK, UsageError
from harness.sut.environments import RELEASE, cache_root, install, installed

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements" / "sglang-cpu.txt"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    install_parser = actions.add_parser("install", help="install releases into the SUT cache")
    install_parser.add_argument("specs", nargs="+", metavar="sglang==VERSION")
    actions.add_parser("list", help="list installed SUT environments")
    parser.set_defaults(handler=main)


def main(arguments: argparse.Namespace) -> int:
    if arguments.action == "list":
        root = cache_root()
        folders = sorted(root.glob("sglang-*")) if root.is_dir() else []
        for folder in folders:
            state = "ready" if installed(f"sglang=={folder.name.split('-', 1)[1]}") else "incomplete"
            print(f"{folder.name}\t{state}\t{folder}")
        if not folders:
            print(f"no SUT environments under {root}")
        return EXIT_OK
    for spec in arguments.specs:
        if not RELEASE.match(spec):
            raise UsageError(f"cannot install {spec!r}: expected sglang==VERSION")
    for spec in arguments.specs:
        started = time.monotonic()
        try:
            folder, fresh = install(spec, REQUIREMENTS)
        except subprocess.CalledProcessError as error:
            raise UsageError(f"pip failed installing {spec} (exit {error.returncode})") from None
        verb = "installed" if fresh else "already installed"
        print(f"{spec}: {verb} in {folder} ({time.monotonic() - started:.1f}s)")
    return EXIT_OK
