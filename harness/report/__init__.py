"""Reporting a run: result rows and their check records, repro files, and the one summary
(run_summary.py) that `kvh run` and a `--jobs` parent build from the records a run stored: the
era table, divergence and skip lines, coverage and the exploration log."""
