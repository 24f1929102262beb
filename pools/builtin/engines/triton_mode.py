"""Whether this process's Triton kernels are compiled or interpreted, decided once, first.

Triton has no CPU backend. `triton.jit` reads TRITON_INTERPRET when it decorates a kernel, so on
a machine without a GPU the variable must be set before any kernel module is imported; every
kernel module imports this one first. An explicit TRITON_INTERPRET (0 or 1) is respected.
"""

from __future__ import annotations

import os

import torch


def interprets(environ: os._Environ | dict, gpu: bool) -> bool:
    """Whether kernels decorated under `environ` on a machine with(out) a GPU are interpreted."""
    explicit = environ.get("TRITON_INTERPRET")
    return not gpu if explicit is None else explicit.lower() in ("1", "true", "yes", "on")


if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
