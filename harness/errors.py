"""Exit codes and the user-facing errors of `kvh`, in one place every verb imports.

A CI job reads the exit code, so each code means one thing: 1 is findings and nothing else.
"""

from __future__ import annotations

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT


class UsageError(Exception):
    """Bad input from the user (a value, a file, an output that cannot be written): reported as
    one line, exit code 2."""
