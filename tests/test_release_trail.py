"""A finding on a release names the release functions its writes ran (harness/run/release_trail.py):
where to look when no line raised and no release call site wrote, as a fault inside a door
written through the call-site model."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import pytest

from backends.registry import BACKENDS
from harness.compare.findings import MOST_FUNCTIONS_SHOWN, trail_text
from harness.plan.candidate import Candidate
from harness.run.cells import check_cell
from harness.run.execute import execute
from harness.run.release_trail import ReleaseTrail
from harness.sut.load.sglang_loader import SutLoadError, load_sglang
from reports.outcome import Outcome
from tests.conftest import scenario_named

RELEASE_FILE = """def store(rows):
    return helper(rows) + helper(rows)


def helper(rows):
    return rows
"""


def _release_module(root: Path):
    """A module in a folder named sglang, as a release's files are."""
    path = root / "sglang" / "fake_pool.py"
    path.parent.mkdir(parents=True)
    path.write_text(RELEASE_FILE)
    spec = importlib.util.spec_from_file_location("kvh_fake_release_pool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outside(rows):
    return rows


def test_the_trail_lists_each_release_function_once_in_call_order(tmp_path: Path) -> None:
    release = _release_module(tmp_path)
    trail = ReleaseTrail(enabled=True)
    write = trail.recording(lambda rows: release.store(_outside(rows)))
    assert write(1) == 2
    write(2)  # a later write's first calls only
    assert trail.functions == ["fake_pool.py:1 store", "fake_pool.py:5 helper"]
    assert sys.gettrace() is None


def test_no_trail_for_the_builtin_pools_or_under_another_tracer(tmp_path: Path) -> None:
    release = _release_module(tmp_path)
    off = ReleaseTrail(enabled=False)
    assert off.recording(release.store) is release.store  # nothing wraps a write when off
    release.store(1)
    assert off.functions == []

    def tracer(frame, event, argument):
        return None

    sys.settrace(tracer)
    try:
        kept = ReleaseTrail(enabled=True)
        kept.recording(release.store)(1)
        assert sys.gettrace() is tracer  # a debugger's or a coverage tool's, left in place
    finally:
        sys.settrace(None)
    assert kept.functions == []


def test_a_long_trail_is_cut_with_the_count_of_the_rest() -> None:
    trail = tuple(f"f.py:{line} f{line}" for line in range(MOST_FUNCTIONS_SHOWN + 3))
    assert trail_text(trail).endswith("; 3 more")
    assert trail_text(trail[:2]) == "f.py:0 f0; f.py:1 f1"


@pytest.mark.sglang
def test_a_wrong_write_through_the_model_names_the_release_door_that_ran() -> None:
    try:
        sglang = load_sglang()
    except SutLoadError as error:
        pytest.skip(f"sglang did not load: {error}")

    class NegatedK(sglang.MHATokenToKVPool):  # a fault in the door: K written negated
        def set_kv_buffer(self, layer, loc, cache_k, cache_v, *args, **kwargs):
            super().set_kv_buffer(layer, loc, -cache_k, cache_v, *args, **kwargs)

    module = copy.copy(sglang)
    module.MHATokenToKVPool = NegatedK
    scenario = scenario_named("mha", "bf16", "prefill")
    candidate = Candidate("sglang", module, "current", "-", "cpu", "plain")
    row = check_cell(scenario, BACKENDS["plain"], "extend", [candidate], 30.0, table_eras=())[0]
    assert row.outcome is Outcome.FINDING
    finding = row.findings[0]
    assert finding.release_site is None  # the model called the door: no release call site
    assert "memory_pool.py:" in finding.release_trail
    assert "MHATokenToKVPool.set_kv_buffer" in finding.release_trail
    assert (
        "test_release_trail.py" not in finding.release_trail
    )  # the test's door is not release code
    assert "(release functions run: " in finding.headline()
    # The judged run itself is not traced: the trail comes from a run of its own.
    assert execute(candidate, scenario, 30.0).release_trail == ()
