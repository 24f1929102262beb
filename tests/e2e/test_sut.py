"""SGLang releases as SUTs of `kvh run`, end to end in a subprocess: a cross-release finding
replayed from its repro file, and a release that is not installed.

The replay needs no release: it builds a fake one, a `pip --target`-shaped folder whose sglang
package holds a faulty pool."""

from __future__ import annotations

import json
import textwrap

import pytest

from harness.sut.load.environments import missing_shared_modules, not_ready_reason
from reports.outcome import Outcome
from tests.conftest import check_records, run_kvh

FAKE_MEMORY_POOL = """
from pools.builtin.sut import builtin_module

_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool = _base.MLATokenToKVPool


class MHATokenToKVPool(_base.MHATokenToKVPool):
    # The planted fault (PR #18882's shape): the scales never reach the cast.
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, k_scale=None, v_scale=None,
                      layer_id_override=None):
        super().set_kv_buffer(layer, loc_info, cache_k, cache_v, None, None, layer_id_override)
"""

FAKE_SWA_POOL = """
from pools.builtin.sut import builtin_module
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool

SWAKVPool = type("SWAKVPool", (builtin_module("current", "torch").SWAKVPool,),
                 {"default_sub_pool_class": MHATokenToKVPool})
"""


@pytest.fixture
def fake_release(tmp_path):
    """A folder shaped like `pip install --target DIR sglang==X`, holding a faulty release."""
    package = tmp_path / "release" / "sglang"
    (package / "srt" / "mem_cache").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.0.0+fake"\n')
    (package / "srt" / "__init__.py").write_text("")
    (package / "srt" / "mem_cache" / "__init__.py").write_text("")
    (package / "srt" / "mem_cache" / "memory_pool.py").write_text(textwrap.dedent(FAKE_MEMORY_POOL))
    (package / "srt" / "mem_cache" / "swa_memory_pool.py").write_text(
        textwrap.dedent(FAKE_SWA_POOL)
    )
    return tmp_path / "release"


@pytest.mark.slow
def test_a_cross_release_finding_replays_from_its_repro(tmp_path, fake_release):
    spec = f"sglang@{fake_release}"
    if missing_shared_modules():
        # The loader's stand-ins (e.g. openai's response types) are built from these modules.
        pytest.skip(not_ready_reason(spec))
    out = tmp_path / "out"
    result = run_kvh(
        "run",
        "--sut",
        spec,
        "--pool",
        "mha",
        "--dtype",
        "bf16",
        "--backend",
        "plain",
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"SUT {spec}: era current (from its capabilities, version 0.0.0+fake)" in result.stderr
    rows = check_records(out)
    assert set(rows[rows["outcome"] == Outcome.FINDING.value]["sut"]) == {spec}
    repro = sorted((out / "repros").glob("*.json"))[0]
    assert json.loads(repro.read_text())["candidate"]["sut"] == spec
    replay = run_kvh("repro", str(repro))
    assert replay.returncode == 1 and "reproduced: identical finding" in replay.stdout


@pytest.mark.slow
def test_a_release_that_is_not_installed_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KVH_CACHE", str(tmp_path / "empty-cache"))
    result = run_kvh("run", "--sut", "sglang==0.5.13", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "kvh sut install sglang==0.5.13" in result.stderr
