"""Planning a run: its options, the SUTs and candidates, the baseline, devices and sharding."""
