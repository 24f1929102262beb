"""GPU-only imports stood in where they stop a release's code, and only there.

A GPU-only package (one a real-code backend declares, sglang_standins.gpu_only) is stood in where
an import stops on it uncaught, and so is a submodule or a name of it: at load
(import_standing_in: the fork sglang-kt's `from sgl_kernel import silu_and_mul`) and in a write
(stand_in_stop, then the execution runs again, harness/run/execute.py: 0.5.9 and 0.5.10's first
write imports the CUDA-graph runner, whose chain reaches `from sgl_kernel.kvcacheio import ...`,
host-offload transfers no write calls). Each name is a placeholder that raises StandInUsed if
called, a limit with its reason. A guarded import (`try: ... except ImportError:`) never stops,
so it keeps its fallback (sglang-kt's get_scalar_types, whose mock a served placeholder broke).
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from typing import Any, Mapping

from harness.sut.load.sglang_standins import (
    FUNC,
    StandIn,
    install,
    is_standin,
    make_module,
    placeholder,
)

# The name a failed `from X import N` asks for (its ImportError carries X as `name`, N only in
# its message).
_UNKNOWN_NAME = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")


def import_standing_in(module: str, gpu_only_table: Mapping[str, StandIn]) -> types.ModuleType:
    """Import `module`; where the chain stops at load time on a GPU-only package of
    `gpu_only_table` (the package absent here, or a name its stand-in lacks), stand that in and
    try again, as often as the chain asks. Only a chain that stops is touched: a release that
    imports as it is imports with the same modules as before."""
    for _ in range(IMPORT_ROUNDS):
        try:
            return importlib.import_module(module)
        except ImportError as error:
            if not stood_in_stop(error, gpu_only_table):
                raise
    return importlib.import_module(module)


IMPORT_ROUNDS = 32  # stops stood in at most, one a round


def stood_in_stop(error: ImportError, table: Mapping[str, StandIn]) -> bool:
    """Whether the stop `error` was on a GPU-only package of `table` (the package itself absent
    here, or a part of its stand-in), now stood in."""
    top = (error.name or "").split(".", 1)[0]
    if top in table and top not in sys.modules:
        install({top: table[top]})
        return True
    return stand_in_stop(error)


def stand_in_stop(error: BaseException) -> bool:
    """Whether `error`, an import that stopped a release's code uncaught, was on a GPU-only
    package stood in here (a submodule of it, or a name its stand-in lacks): if so that module or
    name is now stood in, each name a placeholder that raises StandInUsed when called, and the
    code may be run again. Only a stop is stood in, so a guarded import (`try: from sgl_kernel
    import x` `except ImportError:` a fallback) keeps its fallback."""
    if not isinstance(error, ImportError) or not error.name:
        return False
    top = sys.modules.get(error.name.split(".", 1)[0])
    if not getattr(top, "__kvwrite_gpu_only__", False):
        return False
    if isinstance(error, ModuleNotFoundError):
        if error.name in sys.modules:
            return False
        module = make_module(error.name, {})
        module.__getattr__ = lambda name: _asked_name(error.name, name)
        sys.modules[error.name] = module
        parent, _, child = error.name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)
        return True
    unknown = _UNKNOWN_NAME.search(str(error))
    module = sys.modules.get(error.name)
    if unknown is None or not is_standin(module) or hasattr(module, unknown.group(1)):
        return False
    setattr(module, unknown.group(1), placeholder(error.name, unknown.group(1), FUNC))
    return True


def _asked_name(module: str, name: str) -> Any:
    """A name of a stood-in submodule, made as the import asks for it."""
    if name.startswith("__"):  # the import system's probes (__file__, __all__): not there
        raise AttributeError(name)
    value = placeholder(module, name, FUNC)
    setattr(sys.modules[module], name, value)
    return value
