"""A GPU-only package is stood in where a release's import stops on it uncaught, and only there:
at load (the fork sglang-kt's `from sgl_kernel import silu_and_mul`, an absent package) and in a
write (0.5.9 and 0.5.10 reach `from sgl_kernel.kvcacheio import ...`, a submodule its stand-in
lacks). The import then succeeds and a call raises StandInUsed (a limit, never a finding), while
a guarded import keeps its fallback (sglang-kt's `get_scalar_types`: a placeholder there would be
a false finding), and a stand-in of another kind or a real package still refuses a submodule it
lacks. So does an optional pool's trial write at load, where any other raise is the door's own:
the pool is offered, for its checks to judge (a mutant that broke the HND door's index made its
trial write fail, and the pool's checks became skips of a PASS). Run in a fresh interpreter, as
stand-ins are registered process-wide."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO

RELEASE = {
    "guarded.py": """
        try:
            from kvh_gpu_kernel.scalar_type import scalar_types
        except ImportError:
            scalar_types = "fallback"
        """,
    "unguarded.py": "from kvh_gpu_kernel.kvcacheio import transfer_kv_all_layer\n",
    "absent_top.py": "from kvh_gpu_other import silu_and_mul\n",
    "cpu_sub.py": "import kvh_cpu_package.sub\n",
}

SCRIPT = textwrap.dedent(
    """
    import sys
    import pytest
    from backends.real_code import StandInUsed
    from harness.sut.load.gpu_only_stops import import_standing_in, stand_in_stop
    from harness.sut.load.sglang_standins import StandIn, gpu_only, install

    sys.path.insert(0, sys.argv[1])
    table = gpu_only([{"kvh_gpu_kernel": {"declared": "func"}}, {"kvh_gpu_other": {}}])
    install({"kvh_gpu_kernel": table["kvh_gpu_kernel"],
             "kvh_cpu_package": StandIn("missing", {"kvh_cpu_package": {}}, "not GPU-only")})

    import guarded
    assert guarded.scalar_types == "fallback"  # a guarded import is never stood in

    with pytest.raises(ModuleNotFoundError) as stop:  # a write's import chain stops ...
        import unguarded
    assert stand_in_stop(stop.value)  # ... so the submodule is stood in, and it runs again
    import unguarded
    with pytest.raises(StandInUsed, match="kvh_gpu_kernel.kvcacheio.transfer_kv_all_layer"):
        unguarded.transfer_kv_all_layer(0)

    absent_top = import_standing_in("absent_top", table)  # at load: the package itself
    with pytest.raises(StandInUsed, match="kvh_gpu_other.silu_and_mul"):
        absent_top.silu_and_mul()

    # A pool's trial write at load that stops the same way (0.5.9's FP4 door imports the
    # CUDA-graph runner, whose chain reaches sgl_kernel): stood in, the pool is offered.
    from types import SimpleNamespace
    from harness.sut.load.optional_pool_records import OptionalPool
    from harness.sut.load.optional_pools import _why_not

    class TrialPool:
        def __init__(self, **kwargs):
            self.written = []

        def set_kv_buffer(self, layer, loc, k, v):
            from kvh_gpu_third.kvcacheio import transfer_kv_all_layer  # noqa: F401
            self.written.append(loc)

    record = OptionalPool("TrialPool", "trial", ("TrialPool",), lambda m: m.TrialPool, {},
                          trial_write_layer=0)
    third = gpu_only([{"kvh_gpu_third": {}}])
    assert _why_not(record, SimpleNamespace(TrialPool=TrialPool), third) == ""
    assert _why_not(record, SimpleNamespace(TrialPool=TrialPool), {}) == ""  # stood in already

    class CpuTrialPool(TrialPool):
        def set_kv_buffer(self, layer, loc, k, v):
            import kvh_cpu_absent  # noqa: F401 - not GPU-only: the pool does not write here

    why = _why_not(record, SimpleNamespace(TrialPool=CpuTrialPool), third)
    assert why.startswith("its TrialPool does not write here: ModuleNotFoundError"), why

    class BrokenDoorPool(TrialPool):
        def set_kv_buffer(self, layer, loc, k, v):
            return self.written[loc.item() // 0]  # the release's own slip: its checks judge it

    assert _why_not(record, SimpleNamespace(TrialPool=BrokenDoorPool), third) == ""

    with pytest.raises(ModuleNotFoundError) as stop:
        import cpu_sub
    assert not stand_in_stop(stop.value)
    with pytest.raises(ModuleNotFoundError) as stop:
        import json.kvh_no_such_submodule
    assert not stand_in_stop(stop.value)
    print("ok")
    """
)


def test_a_gpu_only_import_that_stops_is_stood_in_and_a_guarded_one_keeps_its_fallback(tmp_path):
    for name, text in RELEASE.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
