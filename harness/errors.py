"""Exit codes and the user-facing error of `kvh`, in one place every verb imports."""
from __future__ import annotations

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130   # Ctrl-C, as a shell reports SIGINT


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""
