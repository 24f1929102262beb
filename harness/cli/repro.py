"""`kvh repro FILE`: replay a saved finding bit-for-bit; exit 1 if it still reproduces."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cp.cp_repro import is_cp_repro, replay_and_report
from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.report.repro_files import ReproError, recorded_command
from harness.run.replay import replay
from harness.sut.load.loader import SutLoadError
from reports.outcome import Outcome, normalised


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a repro JSON file written by kvh run")
    parser.add_argument("--device", help="replay on this device instead of the recorded one")
    parser.set_defaults(handler=main)


def main(arguments: argparse.Namespace) -> int:
    # CP repros (kvh cp) replay on a torch.distributed group of their recorded size.
    if is_cp_repro(arguments.file):
        return replay_and_report(arguments.file, arguments.device)
    try:
        _, old, result = replay(arguments.file, arguments.device)
    except (ReproError, SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    print(f"replayed {result.label} on scenario {result.scenario.name!r}")
    command = recorded_command(arguments.file)
    print(f"recorded by: {command}" if command else "recorded by: (the run kept no command line)")
    for finding in old:
        print(f"recorded: {finding.headline()}")
    for finding in result.findings:
        print(f"now:      {finding.headline()}")
    if normalised(result.outcome) == Outcome.FINDING:
        same = [f.headline() for f in old] == [f.headline() for f in result.findings]
        print("reproduced: " + ("identical finding" if same else "a different finding"))
        return EXIT_FINDINGS
    print(f"not reproduced: outcome {result.outcome}")
    return EXIT_OK
