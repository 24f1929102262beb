"""Comparing executions: snapshots, oracles, findings, values, byte comparison and the verdict,
pure functions of the runs they read."""
