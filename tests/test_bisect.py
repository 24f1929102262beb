"""`kvh bisect`: the first release whose behaviour differs, releases that cannot be judged
skipped as `git bisect skip` does, and a real run over folder releases with a planted fault."""

from __future__ import annotations

import textwrap

import pytest

from harness.cli.bisect import report
from harness.run.bisect import Probe, bisect
from harness.sut.load.environments import missing_shared_modules, not_ready_reason
from harness.sut.load.release_index import between, ordered
from tests.conftest import run_kvh, scenario_named


def judge_by(behaviours: dict[str, str], tried: list[str]):
    def judge(release: str) -> Probe:
        tried.append(release)
        said = behaviours[release]
        return (
            Probe(release, skipped=said[5:]) if said.startswith("skip:") else Probe(release, said)
        )

    return judge


RELEASES = [f"r{index}" for index in range(9)]


def test_the_first_release_that_behaves_otherwise_is_named_in_few_tries():
    behaviours = {r: ("known_divergence (x)" if int(r[1]) < 6 else "pass") for r in RELEASES}
    tried: list[str] = []
    result = bisect(RELEASES, judge_by(behaviours, tried))
    assert (result.first_changed, result.last_same) == ("r6", "r5")
    assert len(tried) <= 5 and len(set(tried)) == len(tried)


def test_a_release_that_cannot_be_judged_is_skipped_and_its_neighbours_tried():
    behaviours = {r: ("known_divergence (x)" if int(r[1]) < 6 else "pass") for r in RELEASES}
    behaviours["r5"] = behaviours["r4"] = "skip:does not install"
    result = bisect(RELEASES, judge_by(behaviours, []))
    assert (result.first_changed, result.last_same) == ("r6", "r3")
    lines = report(result, scenario_named("mha", "bf16", "decode"), "plain", "extend")
    assert lines[-1] == "  the change may be in one of r4, r5: they could not be judged"
    assert "  r5: skipped: does not install" in lines


def test_ends_that_behave_alike_name_no_release_and_an_unjudged_end_is_refused():
    same = {r: "pass" for r in RELEASES}
    assert bisect(RELEASES, judge_by(same, [])).first_changed is None
    same["r0"] = "skip:not installed"
    with pytest.raises(ValueError, match="cannot end a bisection"):
        bisect(RELEASES, judge_by(same, []))


def test_the_index_s_releases_between_two_are_in_release_order():
    versions = ordered(["0.5.15", "0.5.14", "0.5.15.post1", "0.5.9", "0.5.23", "nonsense"])
    assert versions == ["0.5.9", "0.5.14", "0.5.15", "0.5.15.post1", "0.5.23"]
    assert between(versions, "0.5.14", "0.5.23") == ["0.5.14", "0.5.15", "0.5.15.post1", "0.5.23"]


MEMORY_POOL = """
from pools.builtin.sut import builtin_module

_base = builtin_module("current", "torch")
KVWriteLoc, unwrap_write_loc = _base.KVWriteLoc, _base.unwrap_write_loc
MLATokenToKVPool = _base.MLATokenToKVPool
FAULTY = {faulty}


class MHATokenToKVPool(_base.MHATokenToKVPool):
    def set_kv_buffer(self, layer, loc_info, cache_k, cache_v, k_scale=None, v_scale=None,
                      layer_id_override=None):
        if FAULTY:  # the planted fault (PR #18882's shape): the scales never reach the cast
            k_scale = v_scale = None
        super().set_kv_buffer(layer, loc_info, cache_k, cache_v, k_scale, v_scale,
                              layer_id_override)
"""

SWA_POOL = """
from pools.builtin.sut import builtin_module
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool

SWAKVPool = type("SWAKVPool", (builtin_module("current", "torch").SWAKVPool,),
                 {"default_sub_pool_class": MHATokenToKVPool})
"""


def _release(folder, version: str, faulty: bool) -> str:
    package = folder / version / "sglang"
    files = {
        "__init__.py": f'__version__ = "{version}"\n',
        "srt/__init__.py": "",
        "srt/mem_cache/__init__.py": "",
        "srt/mem_cache/memory_pool.py": MEMORY_POOL.format(faulty=faulty),
        "srt/mem_cache/swa_memory_pool.py": SWA_POOL,
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(text))
    return f"sglang@{folder / version}"


@pytest.mark.slow
def test_bisect_names_the_release_that_planted_the_fault(tmp_path):
    specs = [_release(tmp_path, f"0.0.{n}", faulty=n >= 3) for n in range(5)]
    if missing_shared_modules():
        pytest.skip(not_ready_reason(specs[0]))
    result = run_kvh(
        "bisect",
        specs[0],
        specs[-1],
        *("--releases", ",".join(specs[1:-1]), "--scenario", "scaled-float", "--pool", "mha"),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"first release that behaves otherwise than {specs[0]}: {specs[3]} ")
    assert "(pass -> finding: bytes)" in last and last.endswith(
        f"the last that behaves as it: {specs[2]}"
    )
