"""A stood-in GPU-only package serves the submodules a release imports at load time and the
write never calls (0.5.9 and 0.5.10: `from sgl_kernel.kvcacheio import ...` on the chain of the
first write's lazy import): the import succeeds, a call raises StandInUsed (a limit, never a
finding), and nothing else changes: a stand-in of another kind and a real package still refuse a
submodule they lack. Run in a fresh interpreter, as the stand-ins are registered process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO

SCRIPT = textwrap.dedent(
    """
    import pytest
    from backends.real_code import StandInUsed
    from harness.sut.load.sglang_standins import (
        GPU_ONLY_SUBMODULES, StandIn, gpu_only, install)

    install({
        **gpu_only([{"kvh_gpu_kernel": {"declared": "func"}}]),
        "kvh_cpu_package": StandIn("missing", {"kvh_cpu_package": {}}, "not GPU-only"),
    })
    from kvh_gpu_kernel.kvcacheio import transfer_kv_all_layer, transfer_kv_direct
    with pytest.raises(StandInUsed, match="kvh_gpu_kernel.kvcacheio.transfer_kv_all_layer"):
        transfer_kv_all_layer(0)
    assert GPU_ONLY_SUBMODULES.served == ["kvh_gpu_kernel.kvcacheio"]
    import kvh_gpu_kernel.kvcacheio as served
    assert not hasattr(served, "__all__")  # the import system's own probes are not served
    with pytest.raises(ModuleNotFoundError):
        import kvh_cpu_package.sub
    with pytest.raises(ModuleNotFoundError):
        import json.kvh_no_such_submodule
    print("ok")
    """
)


def test_a_gpu_only_stand_in_serves_the_submodules_an_import_asks_for_and_refuses_calls():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
