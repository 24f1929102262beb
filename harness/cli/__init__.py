"""`kvh`: the command line. Exit codes: 0 all checks passed, 1 findings, 2 usage or input error
(an unwritable output included), 3 an internal error of the harness (with its traceback), 130
interrupted (SIGINT), 143 terminated (SIGTERM): `kvh run` writes what finished first."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Callable, Optional, Sequence

from harness.exit_codes import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    UsageError,
    interrupted_exit_code,
    signal_of,
)
from harness.run.freed_memory import keep_freed_memory


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise UsageError(message)


# verb -> (module with add_arguments(parser), one-line help). Each module sets its handler.
VERBS: dict[str, tuple[str, str]] = {
    "run": ("harness.cli.run", "differential run over pools, dtypes, eras, engines and backends"),
    "repro": ("harness.cli.repro", "replay a repro file"),
    "bisect": (
        "harness.cli.bisect",
        "the first SGLang release (or commit, --git) between two where a check's behaviour changes",
    ),
    "sut": ("harness.cli.sut", "install and list isolated SUT environments (SGLang releases)"),
    "matrix": (
        "harness.cli.matrix",
        "what this machine checks: engines x pools x dtypes x layouts x devices, and backends",
    ),
    "bench": (
        "harness.cli.bench",
        "time verified writes: GB/s, roofline fraction, API overhead ratio",
    ),
    "cp": (
        "harness.cli.cp",
        "context-parallel writes under torch.distributed: every rank's pool against the "
        "single-process write",
    ),
    "mutants": (
        "harness.cli.mutants",
        "mutation self-check: catalogued write-path faults, each must be killed",
    ),
    "report": (
        "harness.cli.report",
        "regression gate, HTML dashboard and summary over a results folder",
    ),
}


def build_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The `kvh` parser. Given the command line, only the verb it names has its options (and
    its module imported): a verb's module pulls in torch, pandas or Hypothesis, and `kvh --help`
    or a usage error of one verb should not pay for every verb's imports. Without it, all."""
    chosen = set(VERBS) if argv is None else _named_verb(argv)
    parser = _Parser(prog="kvh", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for verb, (module, help_text) in VERBS.items():
        verb_parser = verbs.add_parser(verb, help=help_text)
        if verb in chosen:
            importlib.import_module(module).add_arguments(verb_parser)
    return parser


def _named_verb(argv: Sequence[str]) -> set[str]:
    # The top-level parser has no option but --help, so its first other word is the verb.
    words = [word for word in argv if not word.startswith("-")]
    return {words[0]} & set(VERBS) if words else set()


def main(argv: Optional[list[str]] = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else argv
        arguments = build_parser(argv).parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = arguments.handler
        keep_freed_memory()  # a freed pool's memory serves the next (harness/run/freed_memory.py)
        return handler(arguments)
    except UsageError as error:
        print(f"kvh: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as interrupt:  # SIGINT, or SIGTERM where the verb routes it here
        stopped = "terminated (SIGTERM)" if signal_of(interrupt) == "SIGTERM" else "interrupted"
        print(f"kvh: {stopped}", file=sys.stderr)
        return interrupted_exit_code(interrupt)
    except OSError as error:
        if error.filename is None:  # not about a file the user named: the harness's own fault
            return _internal_error()
        # An output that cannot be written (a read-only or full disk, a folder in /proc, no
        # permission): the user's environment, not a finding. Writes are atomic, so nothing is
        # left half-written.
        print(f"kvh: error: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:
        return _internal_error()


def _internal_error() -> int:
    traceback.print_exc()
    print(
        "kvh: internal error of the harness (exit 3), not a finding: please report it with the "
        "traceback above",
        file=sys.stderr,
    )
    return EXIT_INTERNAL
