"""Reporting a run: result rows, repro files, the era table, coverage and the exploration log."""
