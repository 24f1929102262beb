"""`kvh run --coverage`: which lines of the release's write path the run's checks executed, per
file and function, with the lines that cannot run on this machine said apart by the branch test
that rules them out, or the branch before them that returns (decided by the module's own globals
as this machine set them, never by name). Driven through the installed release, as a nightly job
would."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from harness.report.release_lines import _cpu_unreachable, _decided
from tests.conftest import run_kvh

BRANCHES = """
def door(self, loc):
    if _is_cuda and self.fast:
        launch(loc)
        return
    if not _is_cpu:
        other(loc)
    elif self.slow:
        slow(loc)
    if self.use_hnd or _is_hip:
        hnd(loc)
    store(loc)
"""


def test_a_branch_is_ruled_out_only_where_the_module_s_globals_decide_its_test() -> None:
    flags = {"_is_cuda": False, "_is_cpu": True, "_is_hip": False}
    function = ast.parse(textwrap.dedent(BRANCHES)).body[0]
    tests = [node.test for node in ast.walk(function) if isinstance(node, ast.If)]
    assert [_decided(test, flags) for test in tests] == [False, False, None, None]
    unreachable = _cpu_unreachable(function, flags)
    # `_is_cuda and ...` is False whatever self.fast is; `not _is_cpu` rules out its body but
    # not its elif; `self.use_hnd or _is_hip` needs the instance, so it is not decided.
    assert sorted(unreachable) == [4, 5, 7]
    assert "_is_cuda = False" in unreachable[4] and "_is_cpu = True" in unreachable[7]


EARLY_RETURN = """
def door(self, loc):
    check(loc)
    if not (_is_cuda or _is_hip):
        if self.empty:
            return
        store(loc)
        return
    launch(loc)
    if self.fast:
        return
    tiled(loc)
"""


def test_the_lines_after_a_branch_that_returns_on_this_machine_cannot_run_here() -> None:
    """0.5.23's set_kv_buffer_prefix_valid: its CPU branch returns, so the CUDA path after it
    cannot run on a CPU; a branch the instance decides (`self.fast`) rules out nothing."""
    function = ast.parse(textwrap.dedent(EARLY_RETURN)).body[0]
    unreachable = _cpu_unreachable(function, {"_is_cuda": False, "_is_hip": False})
    assert sorted(unreachable) == [9, 10, 11, 12]
    assert "a branch that returns" in unreachable[9] and "_is_hip = False" in unreachable[9]
    # The same on a GPU machine: the CPU branch is the one ruled out, and nothing after it.
    on_gpu = _cpu_unreachable(function, {"_is_cuda": True, "_is_hip": False})
    assert sorted(on_gpu) == [5, 6, 7, 8]


def test_coverage_without_a_release_with_jobs_or_with_trail_is_a_usage_error(
    tmp_path: Path,
) -> None:
    alone = run_kvh("run", "--coverage", "--out", str(tmp_path))
    assert alone.returncode == 2 and "name one with --sut" in alone.stderr
    jobs = run_kvh("run", "--sut", "sglang", "--coverage", "--jobs", "2", "--out", str(tmp_path))
    assert jobs.returncode == 2 and "leave out --jobs" in jobs.stderr
    trail = run_kvh("run", "--sut", "sglang", "--coverage", "--trail", "--out", str(tmp_path))
    assert trail.returncode == 2 and "run them apart" in trail.stderr
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.slow
@pytest.mark.sglang
def test_a_run_says_which_door_lines_ran_and_which_cannot_run_here(tmp_path: Path) -> None:
    from tests.conftest import installed_sglang_root

    if installed_sglang_root() is None:
        pytest.skip("sglang is not installed here")
    done = run_kvh(
        *("run", "--sut", "sglang", "--coverage", "--pool", "mha", "--dtype", "bf16"),
        *("--backend", "plain,triton_dcp", "--out", str(tmp_path)),
    )
    # triton_dcp's masked store is an interpreted release kernel: under the tracer it once
    # raised in every check, as the tracer imported triton before the interpreter switch.
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (written,) = tmp_path.glob("release-lines-*.json")
    files = {f["file"]: f for f in json.loads(written.read_text())["suts"]["sglang"]}
    pool = files["sglang/srt/mem_cache/memory_pool.py"]
    door = next(f for f in pool["functions"] if f["name"] == "MHATokenToKVPool.set_kv_buffer")
    assert door["door"] and door["run"]
    source = (installed_sglang_root() / "sglang/srt/mem_cache/memory_pool.py").read_text()
    masked = {n for n, text in enumerate(source.splitlines(), 1) if "dcp_kv_mask" in text}
    assert masked & set(door["run"]), "the DCP rank's masked write did not run"
    # Its head-major branch's CUDA launcher cannot run on a CPU, by the release's own _is_cuda.
    assert any("_is_cuda = False" in why for why in door["cpu_unreachable"].values())
    # A door no check of this run drove is listed, with every line not reached.
    swa = next(f for f in files["sglang/srt/mem_cache/swa_memory_pool.py"]["functions"])
    assert swa["door"] and not swa["run"] and swa["not_reached"]
    assert "## Release lines run" in (tmp_path / "summary.md").read_text()
    (sut_file,) = tmp_path.glob("sut-*.parquet")
    row = pd.read_parquet(sut_file).iloc[0]
    assert row["door_lines_run"] == sum(
        len(f["run"]) for file in files.values() for f in file["functions"] if f["door"]
    )
    assert row["door_lines_cpu_unreachable"] > 0
