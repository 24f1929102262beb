"""Non-token-major pool layouts (HND page-major, NPU, aiter's 5-D) and FP4 pools."""
