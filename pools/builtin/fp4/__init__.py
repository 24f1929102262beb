"""FP4 (e2m1) KV-cache quantisers: the obvious reference, a vectorised torch version, Triton."""
